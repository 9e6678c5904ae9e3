# Runs a PyKMIP server for cairn's tests: python3 server.py CONFIG LOG.
# Prints READY once the socket listens; the test kills it by pid.
import sys
import warnings

warnings.simplefilter("ignore")

from kmip.services.server import server  # noqa: E402

s = server.KmipServer(config_path=sys.argv[1], log_path=sys.argv[2])
s.start()
# start() only binds; serve() listens. Listen now (again in serve(), which
# is harmless) so READY means connections are accepted.
s._socket.listen(5)
print("READY", flush=True)
s.serve()
