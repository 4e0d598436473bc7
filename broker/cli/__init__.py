"""kafkette's command-line tools (``kafkette serve|groups|cluster|transactions``, the healthcheck)
and the blocking wire client they talk to a broker with. Nothing of the serving broker imports
this package."""
