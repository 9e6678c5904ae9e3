"""Helpers the Python tests share: the admin API of the gateway under test
(CAIRN_ENDPOINT, admin keys CAIRN_ACCESS_KEY / CAIRN_SECRET_KEY)."""

import json
import os
import urllib.parse
import urllib.request

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ENDPOINT = os.environ["CAIRN_ENDPOINT"]
AK = os.environ["CAIRN_ACCESS_KEY"]
SK = os.environ["CAIRN_SECRET_KEY"]


def admin_call(method, path):
    """Signs and sends an admin API request; returns its JSON (or {})."""
    req = AWSRequest(method=method, url=ENDPOINT + path, headers={"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    prep = req.prepare()
    r = urllib.request.Request(prep.url, method=method, headers=dict(prep.headers))
    with urllib.request.urlopen(r) as resp:
        return json.loads(resp.read() or b"{}")


def account(name):
    """Creates an account and its root user; returns (id, root key, secret)."""
    acct = admin_call("PUT", "/admin/account?" + urllib.parse.urlencode({"account-name": name}))
    q = urllib.parse.urlencode({"uid": name + "-root", "account-id": acct["id"], "account-root": "true"})
    root = admin_call("PUT", "/admin/user?" + q)
    return acct["id"], root["keys"][0]["access_key"], root["keys"][0]["secret_key"]
