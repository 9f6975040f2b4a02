#!/usr/bin/env bash
# Records the HTTP/2 samples (h2-tls-py, h2c-py, h2c-curl, h2c-cancel) and their truth files. Run as root
# (tcpdump on lo); needs python3, tcpdump, tshark, curl. One scenario: record_h2.sh h2c-py.
# Writes into samples/ and ends with check_truth.py there (per stream, tshark's http2 dissector).
set -euo pipefail
cd "$(dirname "$0")"
[[ -x .venv/bin/python ]] || python3 -m venv .venv
.venv/bin/pip install -q -r requirements-h2.txt
.venv/bin/python h2_record.py "$@"
python3 check_truth.py
