#!/usr/bin/python3
"""A progress callback as written for Kubeflow Trainer v2, run as a worker.

It knows nothing of depl: it reads the status URL and the token file from the variables
Trainer's TrainJobStatus plugin sets (KUBEFLOW_TRAINER_SERVER_URL, KUBEFLOW_TRAINER_SERVER_TOKEN,
and KUBEFLOW_TRAINER_SERVER_CA_CERT when the server is HTTPS), and POSTs one trainerStatus report
for the first epoch it trains, then waits to be stopped. Rank 0 only, as the worker contract asks.
"""

import json
import os
import ssl
import sys
import time
import urllib.request


def main() -> int:
    url = os.environ["KUBEFLOW_TRAINER_SERVER_URL"]
    token_path = os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]
    with open(token_path, encoding="utf-8") as token_file:
        token = token_file.read()
    if os.environ.get("RANK", "0") == "0":
        epoch = int(os.environ.get("DEPL_START_EPOCH", "0")) + 1
        body = {
            "trainerStatus": {
                "progressPercentage": 10,
                "metrics": [
                    {"name": "loss", "value": "1.75"},
                    {"name": "eval_loss", "value": "1.5"},
                    {"name": "currentEpoch", "value": str(epoch)},
                ],
                "lastUpdatedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        }
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        ca_cert = os.environ.get("KUBEFLOW_TRAINER_SERVER_CA_CERT")
        context = ssl.create_default_context(cafile=ca_cert) if ca_cert else None
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            print(f"reported epoch {epoch}: {answer.status} {answer.read().decode()}", flush=True)
    time.sleep(600)  # stopped by the test
    return 0


if __name__ == "__main__":
    sys.exit(main())
