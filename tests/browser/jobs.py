"""Jobs the browser tests run: a shell script in a small container."""

from __future__ import annotations

from typing import Any

from tests.api.jobs import item


def shell_job(script: str, cpu: str = "100m") -> Any:
    resources = {"cpu": cpu, "memory": "32Mi"}
    return item(
        pod_spec={
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "alpine",
                    "command": ["sh", "-c", script],
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
        }
    )
