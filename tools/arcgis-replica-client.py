#!/usr/bin/env python3
"""Esri's Python API (`arcgis`, pinned in .ci/run) taking a served Trees of Portland log offline with replicas.

    python3 tools/arcgis-replica-client.py SERVICE_URL TOKEN OTHER_TOKEN WORKDIR

Through `FeatureLayerCollection.replicas` only: `create` (JSON, perReplica, with attachments, an envelope around
the first trees and a where on Trees, Inspections whole), `get_list`, `get`; then, as another user (OTHER_TOKEN),
an edit on the service of a tree the replica holds; then `synchronize` (bidirectional, from the replica's
generation) with edits made offline: an update of that tree (overwriting the concurrent edit), an added tree with
an inspection related to it, a delete, an attachment added to a tree; then `synchronize` again (nothing to send,
the service's later change downloaded), and `unregister`. A synchronize after that must be refused. It prints
one JSON object, the `REPLICA-RESULT` line; ServerReplicaClientTests asserts on it and on `editlog replicas`,
`history` and `verify`. Any unexpected exception exits non-zero with the traceback.
"""
import base64
import json
import sys
import types
import warnings

warnings.filterwarnings("ignore")

from arcgis.features import FeatureLayer, FeatureLayerCollection  # noqa: E402
from arcgis.gis._impl._con import Connection  # noqa: E402


def gis_for(services_url, token):
    con = Connection(baseurl=services_url, product="SERVER", all_ssl=False, token=token)
    portal = types.SimpleNamespace(is_arcgisonline=False)
    return types.SimpleNamespace(_con=con, version=[11, 1], _is_arcgisonline=False, _portal=portal, session=con._session)


def main():
    service_url, token, other_token, workdir = sys.argv[1:5]
    services_url = service_url.rsplit("/", 2)[0]
    gis = gis_for(services_url, token)
    other = gis_for(services_url, other_token)
    out = {"arcgis": __import__("arcgis").__version__}

    flc = FeatureLayerCollection(service_url, gis)
    out["syncEnabled"] = flc.properties.syncEnabled
    trees = FeatureLayer(service_url + "/0", gis)
    first = trees.query(where="1=1", out_fields="OBJECTID,GlobalID", order_by_fields="OBJECTID", result_record_count=30)
    xs = [f.geometry["x"] for f in first.features]
    ys = [f.geometry["y"] for f in first.features]
    envelope = {"xmin": min(xs) - 1e-6, "ymin": min(ys) - 1e-6, "xmax": max(xs) + 1e-6, "ymax": max(ys) + 1e-6, "spatialReference": {"wkid": 4326}}

    created = flc.replicas.create(
        replica_name="crew-7 offline",
        layers=[0, 3],
        layer_queries={"0": {"where": "Condition <> 'Dead'", "useGeometry": True, "queryOption": "useFilter"}, "3": {"queryOption": "all"}},
        geometry_filter={"geometry": json.dumps(envelope), "geometryType": "esriGeometryEnvelope", "inSR": 4326},
        transport_type="esriTransportTypeEmbedded",
        return_attachments=True,
        return_attachments_databy_url=False,
        sync_model="perReplica",
        data_format="json",
    )
    out["created"] = {k: created.get(k) for k in ("replicaName", "replicaID", "replicaServerGen", "transportType", "responseType")}
    layers = {l["id"]: l for l in created.get("layers", [])}
    out["created"]["counts"] = {str(k): len(v.get("features", [])) for k, v in layers.items()}
    out["created"]["attachments"] = len(layers.get(0, {}).get("attachments", []))
    replica_id = created["replicaID"]
    gen = created["replicaServerGen"]
    offline_trees = [f["attributes"] for f in layers[0]["features"]]
    out["created"]["treeGlobalIds"] = [a["GlobalID"] for a in offline_trees]

    out["list"] = flc.replicas.get_list()
    out["info"] = flc.replicas.get(replica_id)

    # Another user edits a tree the replica holds, on the service, after the replica was made.
    contested = offline_trees[0]
    other_trees = FeatureLayer(service_url + "/0", other)
    out["concurrent"] = other_trees.edit_features(updates=[{"attributes": {"GlobalID": contested["GlobalID"], "Condition": "Poor"}}], use_global_ids=True)

    # Offline edits, synchronized.
    new_tree = "{7E1B2C3D-0000-4000-8000-00000000E701}"
    new_insp = "{7E1B2C3D-0000-4000-8000-00000000E702}"
    attachment = "{7E1B2C3D-0000-4000-8000-00000000E703}"
    deleted = offline_trees[1]["GlobalID"]
    photo = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(range(200)) + b"\xff\xd9").decode()
    edits = [
        {"id": 0,
         "features": {"adds": [{"attributes": {"GlobalID": new_tree, "Condition": "Good", "DBH": 4.5}, "geometry": {"x": xs[0], "y": ys[0]}}],
                      "updates": [{"attributes": {"GlobalID": contested["GlobalID"], "Condition": "Fair", "DBH": 12.5}}],
                      "deleteIds": [deleted]},
         "attachments": {"adds": [{"globalId": attachment, "parentGlobalId": offline_trees[2]["GlobalID"], "name": "offline.jpg",
                                   "contentType": "image/jpeg", "data": photo}], "updates": [], "deleteIds": []}},
        {"id": 3,
         "features": {"adds": [{"attributes": {"GlobalID": new_insp, "TreeGlobalID": new_tree, "Condition": "Good", "DBH": 4.6,
                                               "Notes": "replica"}}], "updates": [], "deleteIds": []}},
    ]
    synced = flc.replicas.synchronize(replica_id, transport_type="esriTransportTypeEmbedded", replica_server_gen=gen,
                                      return_ids_for_adds=True, edits=json.dumps(edits), sync_direction="bidirectional",
                                      rollback_on_failure=True)
    out["synced"] = synced
    out["ids"] = {"newTree": new_tree, "newInspection": new_insp, "attachment": attachment, "deleted": deleted,
                  "contested": contested["GlobalID"], "attachmentParent": offline_trees[2]["GlobalID"]}

    # The service changes once more; the next synchronize downloads only that.
    other_trees.edit_features(updates=[{"attributes": {"GlobalID": offline_trees[3]["GlobalID"], "DBH": 33.0}}], use_global_ids=True)
    again = flc.replicas.synchronize(replica_id, transport_type="esriTransportTypeEmbedded", replica_server_gen=synced["replicaServerGen"],
                                     sync_direction="download")
    out["again"] = again
    out["downloadTree"] = offline_trees[3]["GlobalID"]

    out["unregister"] = flc.replicas.unregister(replica_id)
    try:
        refused = flc.replicas.synchronize(replica_id, replica_server_gen=again["replicaServerGen"], sync_direction="download")
        out["afterUnregister"] = {"refused": "error" in refused, "answer": refused}
    except Exception as e:
        out["afterUnregister"] = {"refused": True, "exception": str(e)}
    out["listAfter"] = flc.replicas.get_list()
    print("REPLICA-RESULT " + json.dumps(out, default=str))


if __name__ == "__main__":
    main()
