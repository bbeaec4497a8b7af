"""remote/: the transports between machines, OpenSSH and Slurm's srun, as
argv; what neither may do (take a target for an option, run outside an
allocation) and how each one's own failure is put in words. The transports
at work, between network namespaces with their own sshd and slurmd:
test_fleet.py, test_fleet_slurm.py, test_net.py."""
from __future__ import annotations

import pytest

from osmeter.core.errors import RunError
from osmeter.remote import slurm, ssh


def test_an_ssh_argv_never_prompts_reuses_one_connection_and_puts_the_target_last_but_the_command():
    got = ssh.argv("root@10.0.0.2", "echo hi")
    assert got[0] == "ssh" and got[-2:] == ["root@10.0.0.2", "echo hi"]
    opts = dict(o.split("=", 1) for o in got[2:-2:2])
    assert opts["BatchMode"] == "yes" and opts["ControlMaster"] == "auto" and opts["ControlPath"].endswith("/%C")
    assert int(opts["ConnectTimeout"]) > 0 and int(opts["ServerAliveInterval"]) * int(opts["ServerAliveCountMax"]) > 0


@pytest.mark.parametrize("target", ["-oProxyCommand=touch /tmp/x", "", "-F/etc/passwd"])
def test_a_target_that_ssh_would_read_as_an_option_is_refused(target):
    with pytest.raises(RunError, match="not a host"):
        ssh.argv(target, "true")


def test_the_user_can_give_ssh_another_config_file(monkeypatch):
    monkeypatch.setenv("OSMETER_SSH_CONFIG", "/etc/osmeter-ssh.conf")
    got = ssh.argv("h", "true")
    assert got[1:3] == ["-F", "/etc/osmeter-ssh.conf"]


@pytest.mark.parametrize("stderr,words", [
    ("ssh: connect to host h port 22: Connection refused", "connection refused"),
    ("root@h: Permission denied (publickey).", "authorized_keys"),
    ("ssh: Could not resolve hostname nohost: Name or service not known", "unknown host name"),
    ("ssh: connect to host 10.9.9.9 port 22: Connection timed out", "unreachable"),
    ("Timeout, server h not responding.", "stopped answering"),
    ("", "stopped answering"),
    ("Warning: Permanently added 'h' (ED25519) to the list of known hosts.\r\nHost key verification failed.",
     "host key verification failed"),
    ("kex_exchange_identification: read: Connection reset by peer", "ssh: kex_exchange_identification"),
])
def test_ssh_failures_are_put_in_words_a_person_acts_on(stderr, words):
    assert words in ssh.reason(stderr)
    assert ssh.lost("h", stderr, 255) == ssh.reason(stderr)
    assert ssh.lost("h", stderr, 1) is None  # the command's own status, not the transport's


def test_a_quoted_command_line_is_one_word_per_argument_whatever_it_holds():
    import shlex
    words = ["osmeter", "run", "--out", "a dir; rm -rf /", "$(id)", "'"]
    assert shlex.split(ssh.quote(*words)) == words


def test_a_slurm_target_names_a_node_and_runs_inside_the_allocation_only(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(RunError, match="not inside a Slurm allocation"):
        ssh.argv("slurm:node1", "true")
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setattr(slurm, "srun", lambda: "/usr/bin/srun")
    got = ssh.argv("slurm:node1", "echo hi")
    assert got[0] == "/usr/bin/srun" and "--nodelist=node1" in got and got[-3:] == ["sh", "-c", "echo hi"]
    for bad in ("slurm:-x", "slurm:", "slurm:a b", "slurm:a,b"):
        with pytest.raises(RunError, match="not a Slurm node"):
            ssh.argv(bad, "true")


def test_srun_failed_only_where_srun_itself_says_so():
    task = "srun: error: node1: task 0: Exited with exit code 3"
    assert not slurm.failed(task, 3)  # the command's exit, reported by srun: the command's own status
    assert slurm.failed("srun: error: Unable to create step for job 42: Invalid job id specified", 1)
    assert slurm.failed("srun: error: Node failure on node1", 0)  # a lost node, even where srun exits 0
    assert ssh.lost("slurm:node1", task, 3) is None
