#!/usr/bin/env python3
"""Esri's own Python API (`arcgis`, PyPI, pinned in .ci/run) as a client of `editlog serve`.

    python3 tools/arcgis-client.py SERVICE_URL TOKEN WORKDIR
    EDITLOG_PASSWORD_FILE=F python3 tools/arcgis-client.py SERVICE_URL login:NAME WORKDIR

SERVICE_URL is the FeatureServer (http://127.0.0.1:PORT/arcgis/rest/services/NAME/FeatureServer) of a served
Trees of Portland log. The script uses only arcgis's public FeatureLayer / FeatureLayerCollection API
(query, edit_features, attachments.add/get_list/delete, extract_changes) and prints one JSON object, the
`ARCGIS-RESULT` line, with what it saw; ServerClientTests asserts on it and on `editlog history`.

Offline, arcgis cannot build its usual GIS object (it insists on https and arcgis.com), so the `gis` given
to the layers is a small stand-in carrying what they read: a Connection to the server, its version,
that it is not ArcGIS Online, and the Connection's session (attachments.add posts through gis.session). Any exception makes the script exit non-zero with the traceback.
"""
import json
import os
import sys
import types
import urllib.request
import warnings

warnings.filterwarnings("ignore")

from arcgis.features import FeatureLayer, FeatureLayerCollection  # noqa: E402
from arcgis.gis._impl._con import Connection  # noqa: E402


def stand_in_gis(services_url, token):
    if token.startswith("login:"):
        # Logging in with a name and a password: arcgis's EsriGenTokenAuth posts to the token service that
        # /rest/info names (client=referer, its Referer header on every request after).
        with open(os.environ["EDITLOG_PASSWORD_FILE"]) as fh:
            password = fh.read().strip("\n")
        root = services_url.rsplit("/rest/", 1)[0]
        with urllib.request.urlopen(root + "/rest/info?f=json") as r:
            token_url = json.load(r)["authInfo"]["tokenServicesUrl"]
        con = Connection(baseurl=services_url, username=token.split(":", 1)[1], password=password, product="SERVER",
                         all_ssl=False, token_url=token_url)
    else:
        con = Connection(baseurl=services_url, product="SERVER", all_ssl=False, token=token)
    portal = types.SimpleNamespace(is_arcgisonline=False)
    # `session`: attachments.add posts through gis.session (the Connection's requests session).
    return types.SimpleNamespace(_con=con, version=[11, 1], _is_arcgisonline=False, _portal=portal, session=con._session)


def main():
    service_url, token, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    services_url = service_url.rsplit("/", 2)[0]  # …/arcgis/rest/services
    gis = stand_in_gis(services_url, token)
    out = {"arcgis": __import__("arcgis").__version__}
    if token.startswith("login:"):
        out["login"] = {"token": gis._con.token, "auth": type(gis._con._session.auth).__name__}

    trees = FeatureLayer(service_url + "/0", gis)
    inspections = FeatureLayer(service_url + "/3", gis)
    collection = FeatureLayerCollection(service_url, gis)
    out["layerName"] = trees.properties.name
    out["maxRecordCount"] = trees.properties.maxRecordCount
    gen = collection.properties.changeTrackingInfo.layerServerGens[0].serverGen
    out["serverGenBefore"] = gen

    # query: every feature by `where` (arcgis pages through objectIds batches), by objectIds, and a count.
    every = trees.query(where="1=1", out_fields="*")
    oids = sorted(f.attributes["OBJECTID"] for f in every.features)
    out["whereCount"] = len(every.features)
    out["whereDistinct"] = len(set(oids))
    by_ids = trees.query(object_ids=",".join(str(o) for o in oids), out_fields="OBJECTID,Condition")
    out["objectIdsCount"] = len(by_ids.features)
    out["countOnly"] = trees.query(where="Condition = 'Good'", return_count_only=True)
    good = trees.query(where="Condition = 'Good'", out_fields="OBJECTID")
    out["goodCount"] = len(good.features)
    out["geometryType"] = every.geometry_type
    out["firstGeometry"] = every.features[0].geometry

    edits = {}
    # edit_features without GlobalIDs: an add, an update, a delete by ObjectID.
    add = {"attributes": {"Condition": "Good", "DBH": 4.5}, "geometry": {"x": -122.65, "y": 45.52}}
    r = trees.edit_features(adds=[add])
    edits["add"] = r
    added_oid = r["addResults"][0]["objectId"]
    r = trees.edit_features(updates=[{"attributes": {"OBJECTID": oids[0], "Condition": "Poor"}}])
    edits["update"] = r
    r = trees.edit_features(deletes=str(oids[1]))
    edits["delete"] = r
    # …and with GlobalIDs: a tree and an inspection under it (parent first), an update, a delete.
    tree_gid = "{5A1B2C3D-0000-4000-8000-0000000A4C01}"
    insp_gid = "{5A1B2C3D-0000-4000-8000-0000000A4C02}"
    r = trees.edit_features(adds=[{"attributes": {"GlobalID": tree_gid, "Condition": "Fair", "DBH": 2.0},
                                   "geometry": {"x": -122.66, "y": 45.53}}], use_global_ids=True)
    edits["addGlobalId"] = r
    r = inspections.edit_features(adds=[{"attributes": {"GlobalID": insp_gid, "TreeGlobalID": tree_gid, "Condition": "Fair",
                                                        "DBH": 2.1, "Notes": "arcgis client"}}], use_global_ids=True)
    edits["addChildGlobalId"] = r
    r = trees.edit_features(updates=[{"attributes": {"GlobalID": tree_gid, "DBH": 2.5}}], use_global_ids=True)
    edits["updateGlobalId"] = r
    r = inspections.edit_features(deletes=[insp_gid], use_global_ids=True)
    edits["deleteGlobalId"] = r
    out["edits"] = edits

    # attachments: add a file, list, delete.
    path = os.path.join(workdir, "bark.jpg")
    with open(path, "wb") as fh:
        fh.write(b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4 + b"\xff\xd9")
    att = {"add": trees.attachments.add(added_oid, path)}
    listed = trees.attachments.get_list(added_oid)
    att["list"] = listed
    # extract_changes with the attachment while it is there: by URL, then embedded.
    att["changes"] = collection.extract_changes(layers=[0], servergen=[gen], return_attachments=True,
                                                attachments_by_url=True)
    att["changesEmbedded"] = collection.extract_changes(layers=[0], servergen=[gen], return_attachments=True,
                                                        attachments_by_url=False)
    att["delete"] = trees.attachments.delete(added_oid, listed[0]["id"])
    att["after"] = trees.attachments.get_list(added_oid)
    out["attachments"] = att

    # extract_changes since the generation read before the edits.
    changes = collection.extract_changes(layers=[0, 3], servergen=[gen], return_inserts=True, return_updates=True,
                                         return_deletes=True)
    out["changes"] = changes
    ids_only = collection.extract_changes(layers=[0], servergen=[gen], return_inserts=True, return_updates=True,
                                          return_deletes=True, return_ids_only=True)
    out["changesIdsOnly"] = ids_only
    out["addedObjectId"] = added_oid
    out["updatedObjectId"] = oids[0]
    out["deletedObjectId"] = oids[1]
    out["treeGlobalId"] = tree_gid
    out["inspectionGlobalId"] = insp_gid
    print("ARCGIS-RESULT " + json.dumps(out, default=str))


if __name__ == "__main__":
    main()
