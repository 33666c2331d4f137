#!/usr/bin/env python3
"""Esri's own Python API (`arcgis`, PyPI) asking `editlog serve` for the service as of past moments.

    python3 tools/arcgis-historic-client.py SERVICE_URL TOKEN WORKDIR

WORKDIR/moments.json names the moments (epoch ms) and the trees the test edited around them:
{"before": MS, "after": MS, "editedOid": N, "createdGlobalId": G, "deletedOid": N}. The script reads the layer's
archivingInfo and calls FeatureLayer.query(where=..., historic_moment=...) (arcgis pages through objectIds batches
itself) at each moment, and prints one JSON object, the `ARCGIS-HISTORIC` line, with what it saw;
ServerArcGISClientTests asserts on it. The stand-in GIS is tools/arcgis-client.py's.
"""
import importlib.util
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

from arcgis.features import FeatureLayer  # noqa: E402


def load_client():
    spec = importlib.util.spec_from_file_location("arcgis_client", os.path.join(os.path.dirname(__file__), "arcgis-client.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    service_url, token, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.path.join(workdir, "moments.json")) as fh:
        m = json.load(fh)
    gis = load_client().stand_in_gis(service_url.rsplit("/", 2)[0], token)
    trees = FeatureLayer(service_url + "/0", gis)
    info = trees.properties.archivingInfo
    out = {"archivingInfo": {"supportsQueryWithHistoricMoment": info.supportsQueryWithHistoricMoment,
                             "startArchivingMoment": info.startArchivingMoment}}

    def at(moment):
        every = trees.query(where="1=1", out_fields="OBJECTID,GlobalID,Condition", historic_moment=moment)
        edited = trees.query(where="OBJECTID = %d" % m["editedOid"], out_fields="Condition", historic_moment=moment)
        return {
            "count": len(every.features),
            "distinct": len({f.attributes["OBJECTID"] for f in every.features}),
            "countOnly": trees.query(where="1=1", return_count_only=True, historic_moment=moment),
            "editedCondition": [f.attributes["Condition"] for f in edited.features],
            "hasCreated": any(f.attributes["GlobalID"] == m["createdGlobalId"] for f in every.features),
            "hasDeleted": any(f.attributes["OBJECTID"] == m["deletedOid"] for f in every.features),
        }

    out["before"] = at(m["before"])
    out["after"] = at(m["after"])
    out["live"] = at(None)
    try:
        trees.query(where="1=1", historic_moment=info.startArchivingMoment - 1)
        out["beforeStart"] = "no error"
    except Exception as e:  # arcgis raises the service's error
        out["beforeStart"] = str(e)
    print("ARCGIS-HISTORIC " + json.dumps(out))


if __name__ == "__main__":
    main()
