"""`osmeter fleet`: the suite, or one load, on several machines over
OpenSSH or on the nodes of a Slurm allocation through srun, driven from
this one.

  host.py        the hosts, their check, shipping and building, the commands
                 run there, and the Driver that runs a step on each host
  run.py         fleet run: the suite on every host, into DIR/<label>/
  load.py        fleet load: iogen (or net_bw with --net) on every host from
                 one instant, the results merged
  loadstatus.py  what a fleet load's hosts stream while it runs
  rounds.py      fleet run --runs N: a round a run on every host, each host's
                 runs a campaign of its own
  slurm.py       --slurm: the hosts are an allocation's nodes, reached by srun

A fleet directory's hosts compared side by side are analysis/fleet.py's:
it reads through the store and starts nothing.
"""
from osmeter.fleet.host import Host, parse_hosts, stamp
from osmeter.fleet.load import fleet_load, fleet_net
from osmeter.fleet.run import fleet_run

__all__ = ["Host", "parse_hosts", "stamp", "fleet_run", "fleet_load", "fleet_net"]
