#!/usr/bin/env python3
"""bmi-arcgis-restapi (`import restapi`, PyPI, pinned in .ci/run) as a client of `editlog serve`.

    python3 tools/restapi-client.py SERVICE_URL TOKEN WORKDIR
    EDITLOG_PASSWORD_FILE=F python3 tools/restapi-client.py SERVICE_URL login:NAME WORKDIR

SERVICE_URL is the FeatureServer (http://127.0.0.1:PORT/arcgis/rest/services/NAME/FeatureServer) of a served
Trees of Portland log. `restapi.FeatureLayer(url, token=TOKEN)` sends a token given as a string the way it
sends one to ArcGIS Server: as the `agstoken` cookie, never as a parameter. The script pages through layer 0
(`query(exceed_limit=True)`: `resultOffset` pages of `maxRecordCount`), then `addFeatures`, `updateFeatures`,
`deleteFeatures` and `addAttachment` (multipart), lists the attachment, and opens the layer once more with a
wrong token to see how the refusal reaches restapi. Every request's token transport is recorded (a response
hook on restapi's session). It prints one JSON object, the `RESTAPI-RESULT` line; ServerRestapiClientTests
asserts on it and on `editlog history`. Any unexpected exception exits non-zero with the traceback.

With `login:NAME` the script logs in as restapi does, `FeatureLayer(url, NAME, PASSWORD)` (restapi's
`generate_token`: /rest/info's tokenServicesUrl, `client=requestip`), the password read from the file
EDITLOG_PASSWORD_FILE names (never from the command line); `login` in the result says what it got.
"""
import json
import os
import sys
import warnings
from urllib.parse import parse_qs, urlsplit

warnings.filterwarnings("ignore")

import restapi  # noqa: E402
from restapi import rest_utils  # noqa: E402


def every_url(seen):
    return next(r["url"] for r in seen if r["path"].endswith("/0/query"))


def main():
    service_url, token, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    out = {"restapi": rest_utils.VERSION}

    # What each request carried: the agstoken cookie, a token parameter (query or body), an HTTP status.
    requests_seen = []

    def record(response, *args, **kwargs):
        req = response.request
        cookie = req.headers.get("Cookie", "")
        body = req.body if isinstance(req.body, (bytes, str)) else b""
        body = body.encode() if isinstance(body, str) else body
        param = "token" in parse_qs(urlsplit(req.url).query) or b"token=" in body or b'name="token"' in body
        requests_seen.append({"method": req.method, "path": urlsplit(req.url).path, "url": req.url, "status": response.status_code,
                              "agstoken": "agstoken=" in cookie, "tokenParameter": param})

    rest_utils.get_request_client().session.hooks["response"].append(record)

    if token.startswith("login:"):
        with open(os.environ["EDITLOG_PASSWORD_FILE"]) as fh:
            password = fh.read().strip("\n")
        trees = restapi.FeatureLayer(service_url + "/0", token.split(":", 1)[1], password)
        out["login"] = {"token": trees.token.token, "expires": trees.token.expires,
                        "requests": [r["path"] for r in requests_seen if "generateToken" in r["path"] or r["path"].endswith("/rest/info")]}
    else:
        trees = restapi.FeatureLayer(service_url + "/0", token=token)
    out["layerName"] = trees.name
    out["maxRecordCount"] = trees.maxRecordCount

    # Paging: every feature, in pages of maxRecordCount (resultOffset, orderByFields OBJECTID ASC).
    # Without arcpy restapi asks for f=geojson (features with `properties`); with it, f=json (`attributes`).
    every = trees.query(where="1=1", fields="*", exceed_limit=True)
    oids = sorted((f.get("properties") or f.get("attributes"))["OBJECTID"] for f in every.features)
    out["queryFormat"] = parse_qs(urlsplit(every_url(requests_seen)).query).get("f", [""])[0]
    out["pagedCount"] = len(oids)
    out["pagedDistinct"] = len(set(oids))
    out["queryRequests"] = len([r for r in requests_seen if r["path"].endswith("/0/query")])

    edits = {}
    r = trees.addFeatures([{"attributes": {"Condition": "Good", "DBH": 6.5}, "geometry": {"x": -122.64, "y": 45.51}}])
    edits["add"] = r.json
    added_oid = r.json["addResults"][0]["objectId"]
    r = trees.updateFeatures([{"attributes": {"OBJECTID": oids[0], "Condition": "Poor"}}])
    edits["update"] = r.json
    r = trees.deleteFeatures(oids=[oids[1]])
    edits["delete"] = r.json
    path = os.path.join(workdir, "restapi-bark.jpg")
    with open(path, "wb") as fh:
        fh.write(b"\xff\xd8\xff\xe0" + bytes(range(256)) * 2 + b"\xff\xd9")
    r = trees.addAttachment(added_oid, path)
    edits["addAttachment"] = r.json
    out["edits"] = edits
    out["attachments"] = [{"id": a.id, "name": a.name, "size": a.size} for a in trees.attachments(added_oid)]
    out["addedObjectId"] = added_oid
    out["updatedObjectId"] = oids[0]
    out["deletedObjectId"] = oids[1]

    # A wrong token: restapi reads ArcGIS's error out of the body (only when the status is 200).
    try:
        restapi.FeatureLayer(service_url + "/0", token="tok-wrong-restapi")
        out["wrongToken"] = {"refused": False}
    except Exception as e:  # restapi raises RestAPIException (code 498) or, on a non-200 status, requests' HTTPError
        out["wrongToken"] = {"refused": True, "exception": type(e).__name__, "code": getattr(e, "code", None)}

    out["requests"] = requests_seen
    print("RESTAPI-RESULT " + json.dumps(out, default=str))


if __name__ == "__main__":
    main()
