"""`osmeter fleet`: the suite, or one load, on several machines over
OpenSSH, and a fleet's hosts compared.

  host.py        the hosts, their check, shipping and building, the commands
                 run there, and the Driver that runs a step on each host
  run.py         fleet run: the suite on every host, into DIR/<label>/
  load.py        fleet load: iogen (or net_bw with --net) on every host from
                 one instant, the results merged
  loadstatus.py  what a fleet load's hosts stream while it runs
  compare.py     compare and report of a fleet directory (analysis: it reads
                 through store.py and starts nothing; import it as
                 osmeter.fleet.compare)
"""
from .host import Host, parse_hosts, stamp
from .load import fleet_load, fleet_net
from .run import fleet_run

__all__ = ["Host", "parse_hosts", "stamp", "fleet_run", "fleet_load", "fleet_net"]
