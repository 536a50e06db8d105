# SPDX-License-Identifier: Apache-2.0
"""Python client of `husk serve`, the sandbox API of husk (docs/api.yaml).

    import husk
    client = husk.Client(socket="/run/husk/serve.sock")
    with husk.Sandbox.create(client, labels={"job": "demo"}) as sb:
        print(sb.exec(["uname", "-a"]).stdout)
"""

from .client import Client, Event, ExecResult, Metrics, Sandbox
from .errors import HuskError

__all__ = ["Client", "Event", "ExecResult", "HuskError", "Metrics", "Sandbox"]
__version__ = "0.1.0"
