import time, pathlib
from tests.kubeapi import ApiDouble, Seeder
from tests.hotswap.replicas import Replica, write_config
from bench.chaos import SETTINGS, RUNTIME
d = ApiDouble(guard_lease=("hotswap","tpu-hotswap")).start()
w = pathlib.Path("/tmp/dbg"); w.mkdir(exist_ok=True)
kc = d.kubeconfig(str(w/"kc")); cfg = write_config(w/"c.yaml", settings=SETTINGS, runtime=RUNTIME)
r = Replica("x", kubeconfig=kc, config=cfg, log_dir=w); (w/"x.log").unlink(missing_ok=True); r.start()
time.sleep(4); r.sigterm(); print(r.proc.wait(20))
for l in r.logs(): print(str(l)[:200])
d.stop()
