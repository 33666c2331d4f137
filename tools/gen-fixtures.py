#!/usr/bin/env python3
"""Generate the "Trees of Portland" fixtures under Fixtures/trees-of-portland/.

Python 3.11, standard library only, no network.  Deterministic: every random
choice comes from one ``random.Random(42)`` consumed in a fixed order, so the
output is byte-for-byte identical on every run.

    python3 tools/gen-fixtures.py

Writes:
    service.json, webmap.json, rules.json, addresses.json, README.md
    baseline/{Species,Neighborhoods,Trees,Inspections}.json
    scripts/01-*.ndjson .. scripts/08-*.ndjson
    scripts/invalid/*.ndjson + scripts/invalid/expected.json

and then checks them (tiling, containment, nearest address, and a small
reference simulator that replays every script line against the baseline).
"""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
import sys
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
import random

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "Fixtures" / "trees-of-portland"

rng = random.Random(42)

SERVICE_URL = "https://services.arcgis.com/example/arcgis/rest/services/Trees_of_Portland/FeatureServer"
WGS84 = {"wkid": 4326, "latestWkid": 4326}

# --------------------------------------------------------------------------
# Area and neighbourhood grid (integer micro-degrees so shared edges are exact)
# --------------------------------------------------------------------------
X_EDGES_U = [-122665000 + i * 30000 for i in range(5)]   # -122.665 .. -122.545
Y_EDGES_U = [45490000 + j * 20000 for j in range(4)]     #   45.490 ..   45.550
X_EDGES = [round(v / 1e6, 6) for v in X_EDGES_U]
Y_EDGES = [round(v / 1e6, 6) for v in Y_EDGES_U]
XMIN, XMAX, YMIN, YMAX = X_EDGES[0], X_EDGES[-1], Y_EDGES[0], Y_EDGES[-1]

# rows from south (0) to north (2), columns from west (0) to east (3)
NEIGHBORHOOD_GRID = [
    [("Hosford-Abernethy", "Southeast Uplift"), ("Richmond", "Southeast Uplift"),
     ("Foster-Powell", "Southeast Uplift"), ("South Tabor", "Southeast Uplift")],
    [("Buckman", "Southeast Uplift"), ("Laurelhurst", "Southeast Uplift"),
     ("Mount Tabor", "Southeast Uplift"), ("Montavilla", "Southeast Uplift")],
    [("Irvington", "Northeast Coalition of Neighborhoods"), ("Hollywood", "Central Northeast Neighbors"),
     ("Rose City Park", "Central Northeast Neighbors"), ("Roseway", "Central Northeast Neighbors")],
]

BURNSIDE_LAT = 45.5229      # divides N* / S* quadrants
EARTH_R = 6371008.8         # mean Earth radius (m) used for haversine


def haversine(x1: float, y1: float, x2: float, y2: float) -> float:
    p1, p2 = math.radians(y1), math.radians(y2)
    dp, dl = p2 - p1, math.radians(x2 - x1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_R * math.asin(math.sqrt(a))


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------
UTC = timezone.utc
_seen_guids: set[str] = set()


def new_guid() -> str:
    """Esri-style GlobalID: uppercase version-4 UUID in braces."""
    while True:
        b = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        h = b.hex().upper()
        g = "{%s-%s-%s-%s-%s}" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
        if g not in _seen_guids:
            _seen_guids.add(g)
            return g


GUID_RE = re.compile(r"^\{[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}\}$")


def ms(y, mo, d, h=0, mi=0, s=0) -> int:
    return int(datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()) * 1000


def iso(t: datetime | int) -> str:
    if isinstance(t, int):
        t = datetime.fromtimestamp(t / 1000, tz=UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_date(v) -> int:
    if isinstance(v, bool):
        raise ValueError("bool is not a date")
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str):
        d = datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return int(d.timestamp()) * 1000
    raise ValueError("not a date")


def rand_ms(start: int, end: int, step_ms: int = 60_000) -> int:
    return start + rng.randrange(0, (end - start) // step_ms) * step_ms


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        suf = "th"
    else:
        suf = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"


def fake_jpeg(n_min=140, n_max=520) -> str:
    """Small deterministic byte string that looks like a JPEG (SOI, JFIF APP0, ..., EOI)."""
    n = rng.randint(n_min, n_max)
    head = bytes.fromhex("FFD8FFE000104A46494600010100004800480000")
    body = bytes(rng.getrandbits(8) for _ in range(n - len(head) - 2))
    return base64.b64encode(head + body + b"\xff\xd9").decode("ascii")


# --------------------------------------------------------------------------
# Schema: fields, domains, layers
# --------------------------------------------------------------------------
def fld(name, ftype, alias=None, length=None, nullable=True, editable=True, domain=None, default=None):
    f = {"name": name, "type": ftype, "alias": alias or name, "sqlType": "sqlTypeOther"}
    if length is not None:
        f["length"] = length
    f.update({"nullable": nullable, "editable": editable, "domain": domain, "defaultValue": default})
    return f


def coded(name, pairs):
    return {"type": "codedValue", "name": name,
            "codedValues": [{"name": n, "code": c} for c, n in pairs]}


def rangedom(name, lo, hi):
    return {"type": "range", "name": name, "range": [lo, hi]}


DOM_CONDITION = coded("TreeCondition", [(c, c) for c in ("Good", "Fair", "Poor", "Dead")])
DOM_SITETYPE = coded("SiteType", [("Sidewalk", "Sidewalk planting strip"), ("Median", "Median"),
                                  ("Park", "Park"), ("Yard", "Private yard")])
DOM_WIRES = coded("OverheadWires", [(0, "None"), (1, "Low voltage"), (2, "High voltage")])
DOM_FUNCTYPE = coded("FunctionalType", [(c, c) for c in ("Broadleaf Deciduous", "Broadleaf Evergreen", "Coniferous")])
DOM_YESNO = coded("YesNo", [("Yes", "Yes"), ("No", "No")])
DOM_SITEWIDTH = rangedom("SiteWidthRange", 0, 50)
DOM_DBH = rangedom("DBHRange", 0, 200)


def base_fields():
    return [fld("OBJECTID", "esriFieldTypeOID", nullable=False, editable=False),
            fld("GlobalID", "esriFieldTypeGlobalID", length=38, nullable=False, editable=False)]


def tracking_fields():
    return [fld("CreationDate", "esriFieldTypeDate", length=8, editable=False),
            fld("Creator", "esriFieldTypeString", length=128, editable=False),
            fld("EditDate", "esriFieldTypeDate", length=8, editable=False),
            fld("Editor", "esriFieldTypeString", length=128, editable=False)]


TREES_FIELDS = base_fields() + [
    fld("SpeciesGlobalID", "esriFieldTypeGUID", "Species GlobalID", length=38),
    fld("Address", "esriFieldTypeString", length=255),
    fld("Neighborhood", "esriFieldTypeString", length=100),
    fld("PlantedBy", "esriFieldTypeString", "Planted By", length=100),
    fld("PlantedDate", "esriFieldTypeDate", "Planted Date", length=8),
    fld("SiteWidth", "esriFieldTypeDouble", "Site Width (ft)", domain=DOM_SITEWIDTH),
    fld("SiteType", "esriFieldTypeString", "Site Type", length=30, domain=DOM_SITETYPE),
    fld("Wires", "esriFieldTypeSmallInteger", "Overhead Wires", domain=DOM_WIRES),
    fld("Condition", "esriFieldTypeString", length=10, domain=DOM_CONDITION, default="Good"),
    fld("DBH", "esriFieldTypeDouble", "DBH (in)", domain=DOM_DBH),
] + tracking_fields()

NEIGHBORHOODS_FIELDS = base_fields() + [
    fld("Name", "esriFieldTypeString", length=100),
    fld("Coalition", "esriFieldTypeString", length=100),
] + tracking_fields()

SPECIES_FIELDS = base_fields() + [
    fld("CommonName", "esriFieldTypeString", "Common Name", length=100, nullable=False),
    fld("ScientificName", "esriFieldTypeString", "Scientific Name", length=100),
    fld("FunctionalType", "esriFieldTypeString", "Functional Type", length=30, domain=DOM_FUNCTYPE),
    fld("Family", "esriFieldTypeString", length=50),
    fld("Genus", "esriFieldTypeString", length=50),
    fld("Edible", "esriFieldTypeString", length=5, domain=DOM_YESNO),
] + tracking_fields()

INSPECTIONS_FIELDS = base_fields() + [
    fld("TreeGlobalID", "esriFieldTypeGUID", "Tree GlobalID", length=38),
    fld("Condition", "esriFieldTypeString", length=10, domain=DOM_CONDITION, default="Good"),
    fld("DBH", "esriFieldTypeDouble", "DBH (in)", domain=DOM_DBH),
    fld("CollectedBy", "esriFieldTypeString", "Collected By", length=100),
    fld("CollectedDate", "esriFieldTypeDate", "Collected Date", length=8),
    fld("Notes", "esriFieldTypeString", length=1000),
] + tracking_fields()

REL_SPECIES_TREES_ORIGIN = {"id": 0, "name": "Species_Trees", "relatedTableId": 0,
                            "cardinality": "esriRelCardinalityOneToMany", "role": "esriRelRoleOrigin",
                            "keyField": "GlobalID", "composite": False}
REL_SPECIES_TREES_DEST = {"id": 0, "name": "Species_Trees", "relatedTableId": 2,
                          "cardinality": "esriRelCardinalityOneToMany", "role": "esriRelRoleDestination",
                          "keyField": "SpeciesGlobalID", "composite": False}
REL_TREE_INSP_ORIGIN = {"id": 1, "name": "Tree_Inspections", "relatedTableId": 3,
                        "cardinality": "esriRelCardinalityOneToMany", "role": "esriRelRoleOrigin",
                        "keyField": "GlobalID", "composite": True}
REL_TREE_INSP_DEST = {"id": 1, "name": "Tree_Inspections", "relatedTableId": 0,
                      "cardinality": "esriRelCardinalityOneToMany", "role": "esriRelRoleDestination",
                      "keyField": "TreeGlobalID", "composite": True}

EDIT_FIELDS_INFO = {"creationDateField": "CreationDate", "creatorField": "Creator",
                    "editDateField": "EditDate", "editorField": "Editor"}
FULL_CAPS = "Create,Delete,Query,Update,Editing"

LAYER_IDS = {"Trees": 0, "Neighborhoods": 1, "Species": 2, "Inspections": 3}
FIELDS = {"Trees": TREES_FIELDS, "Neighborhoods": NEIGHBORHOODS_FIELDS,
          "Species": SPECIES_FIELDS, "Inspections": INSPECTIONS_FIELDS}


def sms(color):
    return {"type": "esriSMS", "style": "esriSMSCircle", "color": color, "size": 7, "angle": 0,
            "xoffset": 0, "yoffset": 0,
            "outline": {"type": "esriSLS", "style": "esriSLSSolid", "color": [255, 255, 255, 255], "width": 0.75}}


def layer_def(name, ltype, display, caps, has_att, rels, fields, geom=None, renderer=None, description=""):
    d = {
        "currentVersion": 11.3,
        "id": LAYER_IDS[name],
        "name": name,
        "type": ltype,
        "parentLayerId": -1,
        "defaultVisibility": True,
        "minScale": 0,
        "maxScale": 0,
        "description": description,
        "copyrightText": "City of Portland",
        "displayField": display,
        "editFieldsInfo": dict(EDIT_FIELDS_INFO),
        "ownershipBasedAccessControlForFeatures": None,
        "relationships": rels,
        "isDataVersioned": False,
        "supportsRollbackOnFailureParameter": True,
        "supportsStatistics": True,
        "supportsAdvancedQueries": True,
        "supportsApplyEditsWithGlobalIds": True,
        "supportsAttachmentsByUploadId": has_att,
        "editingInfo": {"lastEditDate": ms(2024, 12, 31, 23, 0)},
    }
    if geom:
        d["geometryType"] = geom
        d["extent"] = {"xmin": XMIN, "ymin": YMIN, "xmax": XMAX, "ymax": YMAX, "spatialReference": dict(WGS84)}
        d["sourceSpatialReference"] = dict(WGS84)
        d["allowGeometryUpdates"] = True
        d["drawingInfo"] = {"renderer": renderer, "transparency": 0, "labelingInfo": None}
    d.update({
        "hasM": False,
        "hasZ": False,
        "hasAttachments": has_att,
    })
    if has_att:
        d["attachmentProperties"] = [{"name": n, "isEnabled": True} for n in ("name", "size", "contentType", "keywords")]
    d.update({
        "htmlPopupType": "esriServerHTMLPopupTypeAsHTMLText",
        "objectIdField": "OBJECTID",
        "uniqueIdField": {"name": "OBJECTID", "isSystemMaintained": True},
        "globalIdField": "GlobalID",
        "typeIdField": "",
        "fields": fields,
        "types": [],
        "templates": [],
        "maxRecordCount": 2000,
        "supportedQueryFormats": "JSON, geoJSON, PBF",
        "capabilities": caps,
        "useStandardizedQueries": True,
        "dateFieldsTimeReference": {"timeZone": "UTC", "respectsDaylightSaving": False},
    })
    return d


def build_service():
    trees_renderer = {
        "type": "uniqueValue", "field1": "Condition", "fieldDelimiter": ",",
        "defaultSymbol": sms([128, 128, 128, 255]), "defaultLabel": "Not inspected",
        "uniqueValueInfos": [
            {"value": "Good", "label": "Good", "symbol": sms([56, 168, 0, 255])},
            {"value": "Fair", "label": "Fair", "symbol": sms([230, 230, 0, 255])},
            {"value": "Poor", "label": "Poor", "symbol": sms([255, 128, 0, 255])},
            {"value": "Dead", "label": "Dead", "symbol": sms([168, 0, 0, 255])},
        ],
    }
    nb_renderer = {"type": "simple", "label": "", "description": "",
                   "symbol": {"type": "esriSFS", "style": "esriSFSSolid", "color": [190, 232, 255, 64],
                              "outline": {"type": "esriSLS", "style": "esriSLSSolid",
                                          "color": [0, 92, 230, 255], "width": 1.5}}}
    trees = layer_def("Trees", "Feature Layer", "Address", FULL_CAPS, True,
                      [dict(REL_SPECIES_TREES_DEST), dict(REL_TREE_INSP_ORIGIN)], TREES_FIELDS,
                      "esriGeometryPoint", trees_renderer, "Street trees of Portland, OR")
    trees["templates"] = [{"name": "Tree", "description": "", "drawingTool": "esriFeatureEditToolPoint",
                           "prototype": {"attributes": {"Condition": "Good", "SiteType": "Sidewalk", "Wires": 0}}}]
    nb = layer_def("Neighborhoods", "Feature Layer", "Name", "Query,Update", False, [], NEIGHBORHOODS_FIELDS,
                   "esriGeometryPolygon", nb_renderer, "Neighborhood association boundaries (simplified)")
    sp = layer_def("Species", "Table", "CommonName", FULL_CAPS, False, [dict(REL_SPECIES_TREES_ORIGIN)],
                   SPECIES_FIELDS, description="Tree species")
    insp = layer_def("Inspections", "Table", "Condition", FULL_CAPS, True, [dict(REL_TREE_INSP_DEST)],
                     INSPECTIONS_FIELDS, description="Tree inspections")
    return {"layers": [trees, nb], "tables": [sp, insp]}


# --------------------------------------------------------------------------
# Web map (pop-up configuration)
# --------------------------------------------------------------------------
SYSTEM_FIELDS = {"OBJECTID", "GlobalID", "CreationDate", "Creator", "EditDate", "Editor"}


def field_info(f, editable, visible, label=None):
    fi = {"fieldName": f["name"], "label": label or f["alias"], "isEditable": editable,
          "tooltip": "", "visible": visible}
    t = f["type"]
    if t == "esriFieldTypeString":
        fi["stringFieldOption"] = "textarea" if f.get("length", 0) >= 1000 else "textbox"
    elif t == "esriFieldTypeDate":
        fi["format"] = {"dateFormat": "shortDateShortTime" if f["name"] != "PlantedDate" else "shortDate"}
    elif t == "esriFieldTypeDouble":
        fi["format"] = {"places": 1, "digitSeparator": True}
    elif t in ("esriFieldTypeSmallInteger", "esriFieldTypeInteger", "esriFieldTypeOID"):
        fi["format"] = {"places": 0, "digitSeparator": t != "esriFieldTypeOID"}
    return fi


def popup_field_infos(layer, hidden=(), readonly=()):
    out = []
    for f in FIELDS[layer]:
        n = f["name"]
        if n in SYSTEM_FIELDS or n in hidden:
            out.append(field_info(f, False, False))
        else:
            out.append(field_info(f, n not in readonly, True))
    return out


def build_webmap():
    item = "4d1c2f6a5b9e4e0f8a7d3c2b1a0f9e8d"

    def url(name):
        return f"{SERVICE_URL}/{LAYER_IDS[name]}"

    trees_popup = {
        "title": "Tree {Address}",
        "fieldInfos": popup_field_infos("Trees", hidden=("SpeciesGlobalID",)),
        "description": None,
        "showAttachments": True,
        "mediaInfos": [],
        "relatedRecordsInfo": {"showRelatedRecords": True,
                               "orderByFields": [{"field": "relationships/1/CollectedDate", "order": "desc"}]},
    }
    species_popup = {
        "title": "{CommonName}",
        "fieldInfos": popup_field_infos("Species", readonly=("Family",)),
        "description": None,
        "showAttachments": False,
        "mediaInfos": [],
        "relatedRecordsInfo": {"showRelatedRecords": True, "orderByFields": []},
    }
    insp_popup = {
        "title": "Inspection {CollectedDate}",
        "fieldInfos": popup_field_infos("Inspections", hidden=("TreeGlobalID",)),
        "description": None,
        "showAttachments": True,
        "mediaInfos": [],
        "relatedRecordsInfo": {"showRelatedRecords": True, "orderByFields": []},
    }
    return {
        "operationalLayers": [
            {"id": "Trees_of_Portland_6201_0", "title": "Trees", "url": url("Trees"),
             "layerType": "ArcGISFeatureLayer", "itemId": item, "visibility": True, "opacity": 1,
             "popupInfo": trees_popup},
            {"id": "Trees_of_Portland_6201_1", "title": "Neighborhoods", "url": url("Neighborhoods"),
             "layerType": "ArcGISFeatureLayer", "itemId": item, "visibility": True, "opacity": 0.6,
             "disablePopup": True},
        ],
        "tables": [
            {"id": "Trees_of_Portland_6201_2", "title": "Species", "url": url("Species"),
             "layerType": "ArcGISFeatureLayer", "itemId": item, "popupInfo": species_popup},
            {"id": "Trees_of_Portland_6201_3", "title": "Inspections", "url": url("Inspections"),
             "layerType": "ArcGISFeatureLayer", "itemId": item, "popupInfo": insp_popup},
        ],
        "baseMap": {
            "baseMapLayers": [{
                "id": "World_Topo_Map_3841", "title": "World Topographic Map",
                "layerType": "ArcGISTiledMapServiceLayer",
                "url": "https://services.arcgisonline.com/ArcGIS/rest/services/World_Topo_Map/MapServer",
                "visibility": True, "opacity": 1}],
            "title": "Topographic",
        },
        "initialState": {"viewpoint": {"targetGeometry": {
            "xmin": XMIN, "ymin": YMIN, "xmax": XMAX, "ymax": YMAX, "spatialReference": dict(WGS84)}}},
        "spatialReference": {"wkid": 102100, "latestWkid": 3857},
        "authoringApp": "ArcGISMapViewer",
        "authoringAppVersion": "2024.3",
        "version": "2.31",
    }


RULES = {"rules": [
    {"type": "latestChildRollup", "name": "tree-latest-inspection", "relationship": "Tree_Inspections",
     "parentLayer": "Trees", "childLayer": "Inspections", "orderBy": "CollectedDate",
     "fields": {"Condition": "Condition", "DBH": "DBH"}},
    {"type": "pointInPolygonLookup", "name": "tree-neighborhood", "layer": "Trees", "field": "Neighborhood",
     "polygonLayer": "Neighborhoods", "polygonField": "Name"},
    {"type": "reverseGeocode", "name": "tree-address", "layer": "Trees", "field": "Address",
     "geocoder": {"type": "offlineTable", "table": "addresses.json", "maxDistanceMeters": 250}},
]}

# --------------------------------------------------------------------------
# Addresses (offline reverse-geocoding table)
# --------------------------------------------------------------------------
SE_STREETS = [  # (name, approx. latitude), south -> north
    ("Holgate Blvd", 45.4903), ("Lafayette St", 45.4917), ("Rhone St", 45.4930), ("Gladstone St", 45.4945),
    ("Francis St", 45.4955), ("Franklin St", 45.4964), ("Powell Blvd", 45.4975), ("Tibbetts St", 45.4999),
    ("Brooklyn St", 45.5010), ("Woodward St", 45.5020), ("Clinton St", 45.5032), ("Division St", 45.5047),
    ("Ivon St", 45.5057), ("Sherman St", 45.5068), ("Lincoln St", 45.5081), ("Harrison St", 45.5094),
    ("Stephens St", 45.5107), ("Hawthorne Blvd", 45.5120), ("Main St", 45.5133), ("Salmon St", 45.5140),
    ("Taylor St", 45.5148), ("Yamhill St", 45.5155), ("Belmont St", 45.5163), ("Morrison St", 45.5170),
    ("Alder St", 45.5178), ("Washington St", 45.5185), ("Stark St", 45.5193), ("Oak St", 45.5206),
    ("Pine St", 45.5214), ("Ash St", 45.5222),
]
NE_STREETS = [
    ("Couch St", 45.5236), ("Davis St", 45.5244), ("Everett St", 45.5251), ("Flanders St", 45.5258),
    ("Glisan St", 45.5265), ("Hoyt St", 45.5272), ("Irving St", 45.5280), ("Oregon St", 45.5290),
    ("Pacific St", 45.5300), ("Wasco St", 45.5312), ("Multnomah St", 45.5323), ("Halsey St", 45.5340),
    ("Weidler St", 45.5348), ("Broadway", 45.5355), ("Hancock St", 45.5364), ("Schuyler St", 45.5373),
    ("Tillamook St", 45.5382), ("Thompson St", 45.5391), ("Brazee St", 45.5400), ("Knott St", 45.5411),
    ("Stanton St", 45.5422), ("Siskiyou St", 45.5433), ("Klickitat St", 45.5446), ("Shaver St", 45.5457),
    ("Mason St", 45.5468), ("Fremont St", 45.5484), ("Beech St", 45.5495),
]
N_ROWS, N_COLS = 24, 33
BLOCK_LAT = 0.000724      # ~ one 100-number block north/south of Burnside
AVE_LON = 0.00106         # ~ one numbered avenue east/west


def avenue_number(x: float) -> int:
    return round(12 + (x + 122.6535) / AVE_LON)


def avenue_name(n: int) -> str:
    return "Cesar E Chavez Blvd" if n == 39 else f"{ordinal(n)} Ave"


def zip_code(quad: str, ave: int, y: float) -> str:
    if quad == "SE":
        north_of_division = y >= 45.5047
        if ave <= 50:
            return "97214" if north_of_division else "97202"
        if ave <= 80:
            return "97215" if north_of_division else "97206"
        return "97216" if north_of_division else "97266"
    if ave <= 36:
        return "97232" if y < 45.5355 else "97212"
    if ave <= 79:
        return "97213"
    return "97220"


def build_addresses():
    row_lat = [round(YMIN + (i + 0.5) * (YMAX - YMIN) / N_ROWS, 6) for i in range(N_ROWS)]
    col_lon = [round(XMIN + (j + 0.5) * (XMAX - XMIN) / N_COLS, 6) for j in range(N_COLS)]
    # street names per row: nearest real street (monotone, no reuse) in the row's quadrant
    names = []
    last = {"SE": -1, "NE": -1}
    for y in row_lat:
        quad = "SE" if y < BURNSIDE_LAT else "NE"
        lst = SE_STREETS if quad == "SE" else NE_STREETS
        cands = range(last[quad] + 1, len(lst))
        k = min(cands, key=lambda i: abs(lst[i][1] - y))
        last[quad] = k
        names.append((quad, lst[k][0]))
    aves = [avenue_number(x) for x in col_lon]
    assert len(set(aves)) == len(aves)
    out = []
    for i, y in enumerate(row_lat):
        quad, street = names[i]
        blocks = abs(y - BURNSIDE_LAT) / BLOCK_LAT
        for j, x in enumerate(col_lon):
            ave = aves[j]
            if (i + j) % 2 == 0:
                # house on the east-west street, a little east or west of the avenue
                sign = rng.choice((-1, 1))
                dx = sign * rng.randint(4, 38) / 100 * AVE_LON
                px, py = x + dx, y
                num = ave * 100 + int(round(sign * abs(dx) / AVE_LON * 100))
                num += (num % 2) ^ (1 if rng.random() < 0.5 else 0)   # either side of the street
                label = f"{num} {quad} {street}"
            else:
                # house on the numbered avenue, a little north or south of the street
                sign = rng.choice((-1, 1))
                dy = sign * rng.randint(4, 38) / 100 * BLOCK_LAT
                px, py = x, y + dy
                b = abs(py - BURNSIDE_LAT) / BLOCK_LAT
                num = max(int(b * 100), 12)
                num += (num % 2) ^ (1 if rng.random() < 0.5 else 0)
                label = f"{num} {quad} {avenue_name(ave)}"
            out.append({"x": round(px, 6), "y": round(py, 6),
                        "address": f"{label}, Portland, OR {zip_code(quad, ave, py)}"})
    return out


class AddressIndex:
    """Nearest-address lookup with a coarse bucket grid (exactness checked against brute force)."""

    CELL = 0.004    # degrees; 0.004 deg lon ~ 312 m, lat ~ 444 m at 45.5 N

    def __init__(self, addresses):
        self.a = addresses
        self.buckets = defaultdict(list)
        for k, ad in enumerate(addresses):
            self.buckets[(math.floor(ad["x"] / self.CELL), math.floor(ad["y"] / self.CELL))].append(k)

    def _cands(self, x, y, r):
        cx, cy = math.floor(x / self.CELL), math.floor(y / self.CELL)
        return [k for dx in range(-r, r + 1) for dy in range(-r, r + 1)
                for k in self.buckets.get((cx + dx, cy + dy), ())]

    def nearest1(self, x, y):
        """Nearest address if it is within ~312 m (enough to bound coverage at 250 m)."""
        return min((haversine(x, y, self.a[k]["x"], self.a[k]["y"]), k) for k in self._cands(x, y, 1))

    def nearest2(self, x, y, brute=False):
        ks = range(len(self.a)) if brute else self._cands(x, y, 2)
        ds = sorted((haversine(x, y, self.a[k]["x"], self.a[k]["y"]), k) for k in ks)
        return ds[0], ds[1]


# --------------------------------------------------------------------------
# Species
# --------------------------------------------------------------------------
BD, BE, CO = "Broadleaf Deciduous", "Broadleaf Evergreen", "Coniferous"
SPECIES = [  # common, scientific, functional type, family, genus, edible
    ("Red Maple", "Acer rubrum", BD, "Sapindaceae", "Acer", "No"),
    ("Norway Maple", "Acer platanoides", BD, "Sapindaceae", "Acer", "No"),
    ("Bigleaf Maple", "Acer macrophyllum", BD, "Sapindaceae", "Acer", "No"),
    ("Japanese Maple", "Acer palmatum", BD, "Sapindaceae", "Acer", "No"),
    ("Hedge Maple", "Acer campestre", BD, "Sapindaceae", "Acer", "No"),
    ("Oregon White Oak", "Quercus garryana", BD, "Fagaceae", "Quercus", "No"),
    ("Northern Red Oak", "Quercus rubra", BD, "Fagaceae", "Quercus", "No"),
    ("Pin Oak", "Quercus palustris", BD, "Fagaceae", "Quercus", "No"),
    ("Japanese Flowering Cherry", "Prunus serrulata", BD, "Rosaceae", "Prunus", "No"),
    ("Cherry Plum", "Prunus cerasifera", BD, "Rosaceae", "Prunus", "Yes"),
    ("Sweet Cherry", "Prunus avium", BD, "Rosaceae", "Prunus", "Yes"),
    ("Apple", "Malus domestica", BD, "Rosaceae", "Malus", "Yes"),
    ("Callery Pear", "Pyrus calleryana", BD, "Rosaceae", "Pyrus", "No"),
    ("Common Pear", "Pyrus communis", BD, "Rosaceae", "Pyrus", "Yes"),
    ("Saskatoon Serviceberry", "Amelanchier alnifolia", BD, "Rosaceae", "Amelanchier", "Yes"),
    ("Kousa Dogwood", "Cornus kousa", BD, "Cornaceae", "Cornus", "No"),
    ("Flowering Dogwood", "Cornus florida", BD, "Cornaceae", "Cornus", "No"),
    ("Oregon Ash", "Fraxinus latifolia", BD, "Oleaceae", "Fraxinus", "No"),
    ("White Ash", "Fraxinus americana", BD, "Oleaceae", "Fraxinus", "No"),
    ("Littleleaf Linden", "Tilia cordata", BD, "Malvaceae", "Tilia", "No"),
    ("American Elm", "Ulmus americana", BD, "Ulmaceae", "Ulmus", "No"),
    ("Japanese Zelkova", "Zelkova serrata", BD, "Ulmaceae", "Zelkova", "No"),
    ("Sweetgum", "Liquidambar styraciflua", BD, "Altingiaceae", "Liquidambar", "No"),
    ("Tulip Tree", "Liriodendron tulipifera", BD, "Magnoliaceae", "Liriodendron", "No"),
    ("Ginkgo", "Ginkgo biloba", BD, "Ginkgoaceae", "Ginkgo", "No"),
    ("Honey Locust", "Gleditsia triacanthos", BD, "Fabaceae", "Gleditsia", "No"),
    ("Eastern Redbud", "Cercis canadensis", BD, "Fabaceae", "Cercis", "No"),
    ("European Hornbeam", "Carpinus betulus", BD, "Betulaceae", "Carpinus", "No"),
    ("Paper Birch", "Betula papyrifera", BD, "Betulaceae", "Betula", "No"),
    ("Turkish Filbert", "Corylus colurna", BD, "Betulaceae", "Corylus", "Yes"),
    ("English Walnut", "Juglans regia", BD, "Juglandaceae", "Juglans", "Yes"),
    ("Common Fig", "Ficus carica", BD, "Moraceae", "Ficus", "Yes"),
    ("Persian Ironwood", "Parrotia persica", BD, "Hamamelidaceae", "Parrotia", "No"),
    ("Black Tupelo", "Nyssa sylvatica", BD, "Nyssaceae", "Nyssa", "No"),
    ("Japanese Snowbell", "Styrax japonicus", BD, "Styracaceae", "Styrax", "No"),
    ("Katsura", "Cercidiphyllum japonicum", BD, "Cercidiphyllaceae", "Cercidiphyllum", "No"),
    ("Southern Magnolia", "Magnolia grandiflora", BE, "Magnoliaceae", "Magnolia", "No"),
    ("Pacific Madrone", "Arbutus menziesii", BE, "Ericaceae", "Arbutus", "No"),
    ("Douglas-fir", "Pseudotsuga menziesii", CO, "Pinaceae", "Pseudotsuga", "No"),
    ("Ponderosa Pine", "Pinus ponderosa", CO, "Pinaceae", "Pinus", "No"),
    ("Deodar Cedar", "Cedrus deodara", CO, "Pinaceae", "Cedrus", "No"),
    ("Western Redcedar", "Thuja plicata", CO, "Cupressaceae", "Thuja", "No"),
    ("Incense Cedar", "Calocedrus decurrens", CO, "Cupressaceae", "Calocedrus", "No"),
    ("Giant Sequoia", "Sequoiadendron giganteum", CO, "Cupressaceae", "Sequoiadendron", "No"),
    ("Dawn Redwood", "Metasequoia glyptostroboides", CO, "Cupressaceae", "Metasequoia", "No"),
]

PLANTERS = ["Friends of Trees", "Portland Parks & Recreation", "Portland Bureau of Transportation",
            "Property owner", "Neighborhood tree team", "Unknown"]
INSPECTORS = [("Jordan Alvarez", "jalvarez_pdx"), ("Priya Natarajan", "pnatarajan_pdx"),
              ("Ben Whitaker", "bwhitaker_pdx"), ("Lena Fischer", "lfischer_pdx"),
              ("Marcus Greene", "mgreene_pdx")]
NOTES = ["Minor deadwood in crown.", "Sidewalk heaving near root flare.", "Co-dominant stems; monitor.",
         "Recent pruning cuts callusing well.", "Aphids on new growth.", "Girdling root visible on north side.",
         "Mechanical damage from vehicle on street side.", "Crown clearance over street OK.",
         "Leaf scorch on south side.", "Canker on lower trunk; recheck next season.",
         "Mulch ring needs refreshing.", "Stake and ties can be removed.", "Included bark at main union.",
         "Healthy, vigorous growth.", None]
CONDITIONS = ["Good", "Fair", "Poor", "Dead"]
COND_W = [55, 28, 13, 4]
BASE_CREATOR = "portland_parks"

# --------------------------------------------------------------------------
# Geometry helpers (containment / margins)
# --------------------------------------------------------------------------


def neighborhood_cell(x, y):
    """(row, col) of the grid cell strictly containing (x, y), or None if on an edge/outside."""
    xu, yu = round(x * 1e6), round(y * 1e6)
    if not (X_EDGES_U[0] < xu < X_EDGES_U[-1] and Y_EDGES_U[0] < yu < Y_EDGES_U[-1]):
        return None
    if xu in X_EDGES_U or yu in Y_EDGES_U:
        return None
    col = max(i for i in range(4) if X_EDGES_U[i] < xu)
    row = max(j for j in range(3) if Y_EDGES_U[j] < yu)
    return row, col


def point_in_ring(x, y, ring):
    inside = False
    n = len(ring) - 1
    for i in range(n):
        x1, y1 = ring[i]
        x2, y2 = ring[i + 1]
        if (y1 > y) != (y2 > y):
            xi = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            if x < xi:
                inside = not inside
    return inside


def on_ring_edge(x, y, ring, eps=1e-9):
    for i in range(len(ring) - 1):
        (x1, y1), (x2, y2) = ring[i], ring[i + 1]
        if abs((x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)) < eps and \
                min(x1, x2) - eps <= x <= max(x1, x2) + eps and min(y1, y2) - eps <= y <= max(y1, y2) + eps:
            return True
    return False


def signed_area(ring):
    return sum(ring[i][0] * ring[i + 1][1] - ring[i + 1][0] * ring[i][1] for i in range(len(ring) - 1)) / 2


MIN_EDGE_MARGIN = 0.0003   # degrees kept between a tree and any neighbourhood edge


def good_point(x, y, index: AddressIndex):
    """Inside a cell, away from edges, and with an unambiguous nearest address."""
    if neighborhood_cell(x, y) is None:
        return False
    if min(abs(x - e) for e in X_EDGES) < MIN_EDGE_MARGIN or min(abs(y - e) for e in Y_EDGES) < MIN_EDGE_MARGIN:
        return False
    (d1, _), (d2, _) = index.nearest2(x, y)
    return d1 <= 235 and d2 - d1 >= max(2.0, 0.02 * d1)


def random_point(index: AddressIndex, within=None):
    """within: optional (row, col) cell."""
    while True:
        if within:
            r, c = within
            x = rng.uniform(X_EDGES[c], X_EDGES[c + 1])
            y = rng.uniform(Y_EDGES[r], Y_EDGES[r + 1])
        else:
            x, y = rng.uniform(XMIN, XMAX), rng.uniform(YMIN, YMAX)
        x, y = round(x, 6), round(y, 6)
        if good_point(x, y, index):
            return x, y


# --------------------------------------------------------------------------
# Baseline
# --------------------------------------------------------------------------

def tracking(created: int, creator: str, edited: int | None = None, editor: str | None = None):
    return {"CreationDate": created, "Creator": creator,
            "EditDate": edited if edited is not None else created, "Editor": editor or creator}


def build_baseline(index: AddressIndex, addresses):
    # --- species
    species = []
    for k, (cn, sn, ft, fam, gen, ed) in enumerate(SPECIES):
        created = ms(2024, 1, 5, 17, 0) + k * 60_000
        attrs = {"OBJECTID": k + 1, "GlobalID": new_guid(), "CommonName": cn, "ScientificName": sn,
                 "FunctionalType": ft, "Family": fam, "Genus": gen, "Edible": ed}
        attrs.update(tracking(created, BASE_CREATOR))
        species.append({"attributes": attrs})

    # --- neighbourhoods
    hoods = []
    oid = 0
    for r in range(3):
        for c in range(4):
            oid += 1
            name, coalition = NEIGHBORHOOD_GRID[r][c]
            x0, x1, y0, y1 = X_EDGES[c], X_EDGES[c + 1], Y_EDGES[r], Y_EDGES[r + 1]
            ring = [[x0, y0], [x0, y1], [x1, y1], [x1, y0], [x0, y0]]
            attrs = {"OBJECTID": oid, "GlobalID": new_guid(), "Name": name, "Coalition": coalition}
            attrs.update(tracking(ms(2024, 1, 3, 18, 0) + oid * 60_000, BASE_CREATOR))
            hoods.append({"attributes": attrs, "geometry": {"rings": [ring]}})

    # --- trees (attributes first; Condition/DBH fixed after inspections)
    trees = []
    for k in range(240):
        x, y = random_point(index)
        r, c = neighborhood_cell(x, y)
        (_, ai), _ = index.nearest2(x, y)
        sp = rng.choice(species)["attributes"]
        planted = ms(rng.randint(1985, 2023), rng.randint(1, 12), rng.randint(1, 28))
        created = rand_ms(ms(2024, 1, 8, 16), ms(2024, 2, 28, 23))
        attrs = {
            "OBJECTID": k + 1, "GlobalID": new_guid(), "SpeciesGlobalID": sp["GlobalID"],
            "Address": addresses[ai]["address"], "Neighborhood": NEIGHBORHOOD_GRID[r][c][0],
            "PlantedBy": rng.choice(PLANTERS), "PlantedDate": planted,
            "SiteWidth": rng.choice([2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 10, 12, 15, 20, 30]),
            "SiteType": rng.choices(["Sidewalk", "Median", "Park", "Yard"], [70, 8, 12, 10])[0],
            "Wires": rng.choices([0, 1, 2], [55, 30, 15])[0],
            "Condition": rng.choices(CONDITIONS, COND_W)[0],
            "DBH": round(min(2 + (2024 - planted // 31_557_600_000 - 1970) * rng.uniform(0.25, 0.9), 60), 1),
        }
        attrs.update(tracking(created, BASE_CREATOR))
        trees.append({"attributes": attrs, "geometry": {"x": x, "y": y}})

    # --- inspections (~150): some trees none, some several
    order = list(range(len(trees)))
    rng.shuffle(order)
    plan = []
    total = 0
    for ti in order:
        if total >= 150:
            break
        n = min(rng.choices([1, 2, 3, 4], [45, 30, 15, 10])[0], 150 - total)
        plan.append((ti, n))
        total += n
    inspections = []
    for ti, n in plan:
        t = trees[ti]["attributes"]
        dates = sorted(rand_ms(ms(2024, 3, 1, 16), ms(2024, 11, 30, 23)) for _ in range(n))
        while len(set(d // 86_400_000 for d in dates)) < n:        # distinct days
            dates = sorted(rand_ms(ms(2024, 3, 1, 16), ms(2024, 11, 30, 23)) for _ in range(n))
        dbh = max(0.5, round(t["DBH"] - rng.uniform(0, 1.5), 1))
        for d in dates:
            dbh = round(min(dbh + rng.uniform(0.0, 0.6), 199.0), 1)
            name, user = rng.choice(INSPECTORS)
            created = d + rng.randint(30, 240) * 60_000
            attrs = {"OBJECTID": 0, "GlobalID": new_guid(), "TreeGlobalID": t["GlobalID"],
                     "Condition": rng.choices(CONDITIONS, COND_W)[0], "DBH": dbh,
                     "CollectedBy": name, "CollectedDate": d, "Notes": rng.choice(NOTES)}
            attrs.update(tracking(created, user))
            inspections.append({"attributes": attrs})
        # rollup: tree reflects the latest inspection
        last = inspections[-1]["attributes"]
        t["Condition"], t["DBH"] = last["Condition"], last["DBH"]
        t["EditDate"], t["Editor"] = last["CreationDate"] + 1000, last["Creator"]
    inspections.sort(key=lambda f: (f["attributes"]["CreationDate"], f["attributes"]["GlobalID"]))
    for k, f in enumerate(inspections):
        f["attributes"]["OBJECTID"] = k + 1
    return species, hoods, trees, inspections


def feature_set(layer, features, geom_type=None):
    fs = {"objectIdFieldName": "OBJECTID", "globalIdFieldName": "GlobalID"}
    if geom_type:
        fs["geometryType"] = geom_type
        fs["spatialReference"] = dict(WGS84)     # tables: no geometryType / spatialReference
    fs["fields"] = FIELDS[layer]
    fs["features"] = features
    return fs


# --------------------------------------------------------------------------
# Reference simulator (used to validate the scripts; messages carry the
# substrings listed in scripts/invalid/expected.json)
# --------------------------------------------------------------------------
class SimError(Exception):
    pass


class Sim:
    def __init__(self, service, webmap, baseline, index: AddressIndex, addresses, strict=False):
        self.defs = {d["name"]: d for d in service["layers"] + service["tables"]}
        self.fields = {n: {f["name"]: f for f in d["fields"]} for n, d in self.defs.items()}
        self.popup = {}
        for e in webmap["operationalLayers"] + webmap["tables"]:
            pi = e.get("popupInfo")
            self.popup[e["title"]] = None if (pi is None or e.get("disablePopup")) else \
                {fi["fieldName"]: fi for fi in pi["fieldInfos"]}
        self.rels = {}
        for n, d in self.defs.items():
            for r in d["relationships"]:
                self.rels.setdefault(r["name"], {})[r["role"]] = (n, r)
        self.features = {n: {} for n in self.defs}
        self.geom = {}
        for n, fs in baseline.items():
            for f in fs["features"]:
                a = dict(f["attributes"])
                self.features[n][a["GlobalID"]] = a
                if "geometry" in f:
                    self.geom[a["GlobalID"]] = f["geometry"]
        self.hood_rings = [(f["attributes"]["Name"], f["geometry"]["rings"][0])
                           for f in baseline["Neighborhoods"]["features"]]
        self.index, self.addresses = index, addresses
        self.all_gids = {g for n in self.features for g in self.features[n]}
        self.attachments = defaultdict(dict)       # feature gid -> {attachment id: name}
        self.all_att_ids: set[str] = set()
        self.sessions: dict[str, dict] = {}
        self.used_sids: set[str] = set()
        self.lock: dict[str, str] = {}
        self.actor = self.device = None
        self.at = None
        self.strict = strict                       # lint rules for the valid scripts
        self.stats = Counter()
        self.rollup_log = []

    # ---- helpers
    def layer_of(self, gid):
        for n, fs in self.features.items():
            if gid in fs:
                return n
        return None

    def parent_tree(self, insp_attrs):
        return insp_attrs.get("TreeGlobalID")

    def caps(self, layer):
        return set(self.defs[layer]["capabilities"].split(","))

    def check_value(self, layer, field, value):
        fdef = self.fields[layer].get(field)
        if fdef is None:
            raise SimError(f"unknown field '{field}' on layer {layer}")
        if not fdef["editable"]:
            raise SimError(f"field '{field}' is read-only")
        pi = (self.popup[layer] or {}).get(field)
        if pi is None or not pi["isEditable"]:
            raise SimError(f"field '{field}' is not editable in the pop-up")
        if value is None:
            if not fdef["nullable"]:
                raise SimError(f"field '{field}' is not nullable")
            return None
        t = fdef["type"]
        if t == "esriFieldTypeString":
            if not isinstance(value, str):
                raise SimError(f"field '{field}' expects a string")
            if len(value) > fdef["length"]:
                raise SimError(f"value exceeds field length {fdef['length']} of '{field}'")
        elif t == "esriFieldTypeDouble":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SimError(f"field '{field}' expects a number")
        elif t == "esriFieldTypeSmallInteger":
            if isinstance(value, bool) or not isinstance(value, int) or not -32768 <= value <= 32767:
                raise SimError(f"field '{field}' expects a small integer")
        elif t == "esriFieldTypeDate":
            try:
                value = parse_date(value)
            except ValueError:
                raise SimError(f"field '{field}' expects a date")
        elif t == "esriFieldTypeGUID":
            if not isinstance(value, str) or not GUID_RE.match(value):
                raise SimError(f"field '{field}' expects a GUID")
        dom = fdef["domain"]
        if dom and dom["type"] == "codedValue":
            if value not in [cv["code"] for cv in dom["codedValues"]]:
                raise SimError(f"value {value!r} is not in coded value domain {dom['name']}")
        elif dom and dom["type"] == "range":
            lo, hi = dom["range"]
            if not lo <= value <= hi:
                raise SimError(f"value {value} is outside range domain {dom['name']} [{lo}, {hi}]")
        return value

    def session_for(self, obj):
        sid = obj.get("session")
        if sid is None:
            mine = [s for s in self.sessions.values() if s["actor"] == self.actor]
            if len(mine) != 1:
                raise SimError(f"actor {self.actor} has {len(mine)} open sessions; name one")
            return mine[0]
        s = self.sessions.get(sid)
        if s is None:
            raise SimError(f"session {sid} is not open")
        if s["actor"] != self.actor:
            raise SimError(f"session {sid} belongs to {s['actor']}")
        return s

    def open_session(self, obj, layer, gid, kind, attrs, parent=None):
        sid = obj.get("session")
        if sid is None:
            raise SimError("fixture lint: name sessions explicitly")
        if sid in self.used_sids:
            raise SimError(f"session id {sid} already used")
        if self.strict and any(s["actor"] == self.actor for s in self.sessions.values()):
            raise SimError("fixture lint: actor already has an open session")
        self.used_sids.add(sid)
        self.sessions[sid] = {"id": sid, "actor": self.actor, "device": self.device, "layer": layer, "gid": gid,
                              "kind": kind, "attrs": attrs, "parent": parent, "relate": {},
                              "add_att": {}, "rename_att": {}, "detach_att": set()}
        self.lock[gid] = sid

    def close_session(self, s):
        del self.sessions[s["id"]]
        del self.lock[s["gid"]]

    def rollup(self, tree_gid):
        kids = [a for a in self.features["Inspections"].values() if a["TreeGlobalID"] == tree_gid]
        if not kids:
            return
        latest = max(kids, key=lambda a: a["CollectedDate"])
        t = self.features["Trees"][tree_gid]
        before = (t["Condition"], t["DBH"])
        t["Condition"], t["DBH"] = latest["Condition"], latest["DBH"]
        self.rollup_log.append((tree_gid, before, (t["Condition"], t["DBH"]), latest["GlobalID"]))

    def lookup_hood(self, x, y):
        hits = [n for n, ring in self.hood_rings if point_in_ring(x, y, ring) and not on_ring_edge(x, y, ring)]
        return hits[0] if len(hits) == 1 else None

    def lookup_address(self, x, y):
        (d1, k), _ = self.index.nearest2(x, y, brute=True)
        return self.addresses[k]["address"] if d1 <= 250 else None

    # ---- apply one line
    def apply(self, obj):
        if not isinstance(obj, dict) or "op" not in obj:
            raise SimError("line is not an op object")
        for k in ("actor", "device", "at"):
            if k in obj:
                setattr(self, k, obj[k])
        if self.actor is None or self.device is None or self.at is None:
            raise SimError("actor/device/at missing on first line")
        now = parse_date(self.at)
        if self.strict and getattr(self, "_last_at", None) is not None and now <= self._last_at:
            raise SimError("fixture lint: 'at' must increase")
        self._last_at = now
        op = obj["op"]
        self.stats[op] += 1
        getattr(self, "op_" + op)(obj, now)

    def op_create(self, obj, now):
        layer = obj["layer"]
        if layer not in self.defs:
            raise SimError(f"unknown layer {layer}")
        if "Create" not in self.caps(layer):
            raise SimError(f"layer {layer} capabilities do not include Create")
        if self.popup[layer] is None:
            raise SimError(f"layer {layer} has no pop-up")
        gid = obj["globalId"]
        if not GUID_RE.match(gid) or gid in self.all_gids:
            raise SimError(f"globalId {gid} is invalid or already used")
        spatial = "geometryType" in self.defs[layer]
        if spatial:
            g = obj.get("geometry")
            if not g or g.get("spatialReference", {}).get("wkid") != 4326 or "x" not in g:
                raise SimError("point geometry with wkid 4326 required")
            if self.strict and not (XMIN < g["x"] < XMAX and YMIN < g["y"] < YMAX):
                raise SimError("fixture lint: geometry outside area")
        elif "geometry" in obj:
            raise SimError("tables have no geometry")
        attrs = {}
        for f, v in obj.get("attributes", {}).items():
            attrs[f] = self.check_value(layer, f, v)
        parent = None
        if "parent" in obj:
            rel = self.rels.get(obj["parent"]["relationship"])
            if not rel or rel["esriRelRoleDestination"][0] != layer:
                raise SimError("bad parent relationship")
            plyr = rel["esriRelRoleOrigin"][0]
            pg = obj["parent"]["globalId"]
            if pg not in self.features[plyr]:
                raise SimError(f"parent {pg} does not exist")
            if pg in self.lock:
                raise SimError(f"parent {pg} has an open session")
            parent = pg
            attrs[rel["esriRelRoleDestination"][1]["keyField"]] = pg
        self.lint_dates(attrs, now)
        self.all_gids.add(gid)
        self.open_session(obj, layer, gid, "create", attrs, parent)
        self.sessions[obj["session"]]["geometry"] = obj.get("geometry")
        self.stats["create:" + layer + (":parent" if parent else "")] += 1

    def op_edit(self, obj, now):
        layer, gid = obj["layer"], obj["globalId"]
        if layer not in self.defs:
            raise SimError(f"unknown layer {layer}")
        if self.popup[layer] is None:
            raise SimError(f"layer {layer} has no pop-up; it cannot be edited")
        if "Update" not in self.caps(layer):
            raise SimError(f"layer {layer} capabilities do not include Update")
        if gid not in self.features[layer]:
            raise SimError(f"feature {gid} does not exist in {layer}")
        if gid in self.lock:
            raise SimError(f"feature {gid} already has an open session")
        if layer == "Inspections":
            pt = self.parent_tree(self.features[layer][gid])
            if pt in self.lock:
                raise SimError(f"parent tree {pt} has an open session")
        self.open_session(obj, layer, gid, "edit", {})
        self.stats["edit:" + layer] += 1

    def lint_dates(self, attrs, now):
        for f in ("CollectedDate", "PlantedDate"):
            if self.strict and attrs.get(f) is not None and attrs[f] > now:
                raise SimError(f"fixture lint: {f} is later than the client time")

    def op_set(self, obj, now):
        s = self.session_for(obj)
        s["attrs"][obj["field"]] = self.check_value(s["layer"], obj["field"], obj["value"])
        self.lint_dates(s["attrs"], now)

    def op_relate(self, obj, now):
        s = self.session_for(obj)
        rel = self.rels.get(obj["relationship"])
        if not rel or rel["esriRelRoleDestination"][0] != s["layer"]:
            raise SimError(f"relationship {obj['relationship']} cannot be related from {s['layer']}")
        olayer = rel["esriRelRoleOrigin"][0]
        if obj["globalId"] not in self.features[olayer]:
            raise SimError(f"related {olayer} record {obj['globalId']} does not exist")
        s["relate"][rel["esriRelRoleDestination"][1]["keyField"]] = obj["globalId"]

    def op_attach(self, obj, now):
        s = self.session_for(obj)
        if not self.defs[s["layer"]]["hasAttachments"]:
            raise SimError(f"layer {s['layer']} does not support attachments")
        name = obj["name"]
        if not name or "/" in name or "\\" in name or name.startswith(".") or ".." in name:
            raise SimError(f"invalid attachment name {name!r}")
        aid = obj["attachmentId"]
        if not GUID_RE.match(aid) or aid in self.all_att_ids or aid in self.all_gids:
            raise SimError("attachment id invalid or reused")
        data = base64.b64decode(obj["dataBase64"], validate=True)
        if self.strict and not (100 <= len(data) <= 600 and data[:2] == b"\xff\xd8"):
            raise SimError("fixture lint: attachment payload size/shape")
        if obj.get("contentType") != "image/jpeg" or obj.get("preferredSize") not in (
                "small", "medium", "large", "extraLarge", "actual"):
            raise SimError("contentType/preferredSize")
        self.all_att_ids.add(aid)
        s["add_att"][aid] = name

    def _committed_att(self, s, aid):
        if aid not in self.attachments[s["gid"]] or aid in s["detach_att"]:
            raise SimError(f"attachment {aid} does not exist on this feature")

    def op_renameAttachment(self, obj, now):
        s = self.session_for(obj)
        self._committed_att(s, obj["attachmentId"])
        name = obj["name"]
        if not name or "/" in name or "\\" in name or ".." in name:
            raise SimError(f"invalid attachment name {name!r}")
        s["rename_att"][obj["attachmentId"]] = name

    def op_detach(self, obj, now):
        s = self.session_for(obj)
        self._committed_att(s, obj["attachmentId"])
        s["detach_att"].add(obj["attachmentId"])

    def op_finish(self, obj, now):
        s = self.session_for(obj)
        layer, gid = s["layer"], s["gid"]
        attrs = dict(s["attrs"])
        attrs.update(s["relate"])
        if layer == "Inspections":
            tree = attrs.get("TreeGlobalID", self.features[layer].get(gid, {}).get("TreeGlobalID"))
            if not tree:
                raise SimError("composite relationship Tree_Inspections requires a parent tree")
            if tree not in self.features["Trees"]:
                raise SimError(f"tree {tree} does not exist")
        if s["kind"] == "create":
            rec = {f: None for f in self.fields[layer]}
            for f, fd in self.fields[layer].items():
                if fd["defaultValue"] is not None:
                    rec[f] = fd["defaultValue"]
            rec["OBJECTID"] = max([a["OBJECTID"] for a in self.features[layer].values()] + [0]) + 1
            rec["GlobalID"] = gid
            rec.update(tracking(now, self.actor))
            rec.update(attrs)
            if layer == "Trees":
                g = s["geometry"]
                rec["Neighborhood"] = self.lookup_hood(g["x"], g["y"])
                rec["Address"] = self.lookup_address(g["x"], g["y"])
                if self.strict and (rec["Neighborhood"] is None or rec["Address"] is None):
                    raise SimError("fixture lint: new tree outside neighbourhoods/addresses")
                self.geom[gid] = g
            self.features[layer][gid] = rec
        else:
            rec = self.features[layer][gid]
            rec.update(attrs)
            rec["EditDate"], rec["Editor"] = now, self.actor
        for aid in s["detach_att"]:
            del self.attachments[gid][aid]
        for aid, n in s["rename_att"].items():
            if aid in self.attachments[gid]:
                self.attachments[gid][aid] = n
        self.attachments[gid].update(s["add_att"])
        self.close_session(s)
        if layer == "Inspections":
            self.rollup(rec["TreeGlobalID"])

    def _discard(self, s):
        for aid in s["add_att"]:
            self.all_att_ids.discard(aid)    # never committed
        self.close_session(s)

    def op_cancel(self, obj, now):
        self._discard(self.session_for(obj))

    def op_resume(self, obj, now):
        s = self.session_for(obj)
        if "session" not in obj:
            raise SimError("resume needs a session id")
        s["device"] = self.device

    def op_abandon(self, obj, now):
        s = self.sessions.get(obj.get("session"))
        if s is None:
            raise SimError(f"session {obj.get('session')} is not open")
        if self.strict and s["actor"] != self.actor:
            raise SimError("fixture lint: abandon own sessions only")
        self._discard(s)

    def op_delete(self, obj, now):
        layer, gid = obj["layer"], obj["globalId"]
        if "Delete" not in self.caps(layer):
            raise SimError(f"layer {layer} capabilities do not include Delete")
        if self.popup[layer] is None:
            raise SimError(f"layer {layer} has no pop-up")
        if gid not in self.features[layer]:
            raise SimError(f"feature {gid} does not exist in {layer}")
        if gid in self.lock:
            raise SimError(f"feature {gid} has an open session")
        if layer == "Inspections":
            pt = self.features[layer][gid]["TreeGlobalID"]
            if pt in self.lock:
                raise SimError(f"parent tree {pt} has an open session")
            del self.features[layer][gid]
            self.attachments.pop(gid, None)
            self.rollup(pt)
        elif layer == "Trees":
            kids = [g for g, a in self.features["Inspections"].items() if a["TreeGlobalID"] == gid]
            for k in kids:
                if k in self.lock:
                    raise SimError(f"inspection {k} has an open session")
            for k in kids:
                del self.features["Inspections"][k]
                self.attachments.pop(k, None)
            self.stats["cascade-deleted-inspections"] += len(kids)
            del self.features[layer][gid]
            self.attachments.pop(gid, None)
        else:
            del self.features[layer][gid]
        self.stats["delete:" + layer] += 1


# --------------------------------------------------------------------------
# Script writer
# --------------------------------------------------------------------------
DEVICES = {"maria.lopez": "ipad-07", "dev.patel": "iphone-12", "sam.okafor": "iphone-15", "auditor.kim": "ipad-02"}


class Script:
    def __init__(self, name: str, start: datetime):
        self.name, self.t, self.lines = name, start, []
        self.actor = self.device = None

    def op(self, op, actor, gap=(1, 4), session=None, device=None, **payload):
        if self.lines:
            self.t += timedelta(minutes=rng.randint(*gap), seconds=rng.randint(0, 59))
        device = device or DEVICES[actor]
        d = {"op": op}
        if not self.lines or actor != self.actor or device != self.device:
            d["actor"], d["device"] = actor, device
            self.actor, self.device = actor, device
        d["at"] = iso(self.t)
        if session:
            d["session"] = session
        d.update(payload)
        self.lines.append(d)
        return d

    def text(self):
        return "".join(json.dumps(l, ensure_ascii=False) + "\n" for l in self.lines)


def geom(x, y):
    return {"x": x, "y": y, "spatialReference": {"wkid": 4326}}


def photo(actor_script: Script, actor, name, size="medium", session=None, gap=(1, 3)):
    aid = new_guid()
    actor_script.op("attach", actor, gap=gap, session=session, attachmentId=aid, name=name,
                    contentType="image/jpeg", dataBase64=fake_jpeg(), preferredSize=size)
    return aid


def build_scripts(base, index):
    species = {a["attributes"]["ScientificName"]: a["attributes"]["GlobalID"] for a in base["Species"]["features"]}
    trees = [f["attributes"] for f in base["Trees"]["features"]]
    insp = [f["attributes"] for f in base["Inspections"]["features"]]
    kids = defaultdict(list)
    for a in insp:
        kids[a["TreeGlobalID"]].append(a)
    for v in kids.values():
        v.sort(key=lambda a: a["CollectedDate"])
    by_count = defaultdict(list)
    for t in trees:
        by_count[len(kids[t["GlobalID"]])].append(t["GlobalID"])
    used = set()

    def pick(pool):
        cands = [g for g in pool if g not in used]
        g = rng.choice(cands)
        used.add(g)
        return g

    T_A = pick(by_count[2])                       # gets new + back-dated inspections, then a delete
    T_B = pick(by_count[0])                       # interleaved attribute edit
    T_C = pick(by_count[1])                       # interleaved inspection
    T_D = pick(by_count[0] + by_count[1])         # session left open (03) and resumed (04)
    T_E = pick(by_count[1])                       # cancelled session (05)
    T_G = pick(by_count[0])                       # abandoned session (05 -> 07)
    T_H = pick(by_count[3] + by_count[4])         # inspection updates (06)
    T_I = pick([g for c in (2, 3, 4) for g in by_count[c]])   # deleted with its inspections (07)
    T_M = pick(by_count[0])                       # plain attribute edit (03)
    T_S = pick(by_count[0] + by_count[1])         # species change (03)
    T_K = pick(by_count[1] + by_count[2])         # auditor edit (06)
    cur_species = {t["GlobalID"]: t["SpeciesGlobalID"] for t in trees}

    S = {}
    # ---------------------------------------------------------------- 01
    s = Script("01-new-plantings.ndjson", datetime(2026, 5, 4, 16, 2, 11, tzinfo=UTC))
    N1, N2, N3 = new_guid(), new_guid(), new_guid()
    x, y = random_point(index, within=(1, 0))
    s.op("create", "maria.lopez", session="s-0101", layer="Trees", globalId=N1, geometry=geom(x, y),
         attributes={"PlantedBy": "Friends of Trees", "PlantedDate": "2026-05-02T00:00:00Z", "SiteWidth": 4.5,
                     "SiteType": "Sidewalk", "Wires": 0, "Condition": "Good", "DBH": 1.5})
    s.op("relate", "maria.lopez", relationship="Species_Trees", globalId=species["Quercus garryana"])
    A1 = photo(s, "maria.lopez", "IMG_2041.jpg", "medium")
    s.op("finish", "maria.lopez")
    x, y = random_point(index, within=(1, 1))
    s.op("create", "maria.lopez", gap=(6, 15), session="s-0102", layer="Trees", globalId=N2, geometry=geom(x, y),
         attributes={"Condition": "Good"})
    s.op("relate", "maria.lopez", relationship="Species_Trees", globalId=species["Acer rubrum"])
    s.op("set", "maria.lopez", field="PlantedBy", value="Friends of Trees")
    s.op("set", "maria.lopez", field="PlantedDate", value=ms(2026, 5, 2))
    s.op("set", "maria.lopez", field="SiteType", value="Sidewalk")
    s.op("set", "maria.lopez", field="SiteWidth", value=3.5)
    s.op("set", "maria.lopez", field="Wires", value=1)
    s.op("set", "maria.lopez", field="DBH", value=1.25)
    A2 = photo(s, "maria.lopez", "IMG_2044.jpg", "large")
    s.op("finish", "maria.lopez")
    x, y = random_point(index, within=(2, 1))
    s.op("create", "dev.patel", gap=(9, 20), session="s-0103", layer="Trees", globalId=N3, geometry=geom(x, y),
         attributes={"PlantedBy": "Portland Parks & Recreation", "PlantedDate": ms(2026, 4, 28),
                     "SiteType": "Park", "SiteWidth": 30, "Wires": 0, "DBH": 2.0})
    s.op("relate", "dev.patel", relationship="Species_Trees", globalId=species["Malus domestica"])
    photo(s, "dev.patel", "apple-whip.jpg", "actual")
    s.op("set", "dev.patel", field="Condition", value="Fair")
    s.op("finish", "dev.patel")
    S[s.name] = s

    # ---------------------------------------------------------------- 02
    s = Script("02-inspections.ndjson", datetime(2026, 5, 11, 15, 40, 5, tzinfo=UTC))
    I_new_latest, I_backdated, I_c, I_n1 = new_guid(), new_guid(), new_guid(), new_guid()
    prev = kids[T_A][-1]
    s.op("create", "sam.okafor", session="s-0201", layer="Inspections", globalId=I_new_latest,
         parent={"relationship": "Tree_Inspections", "globalId": T_A},
         attributes={"Condition": "Fair", "DBH": round(prev["DBH"] + 0.8, 1), "CollectedBy": "Sam Okafor",
                     "CollectedDate": "2026-05-11T15:38:00Z", "Notes": "Lower limb broken in wind storm; cleaned up."})
    s.op("finish", "sam.okafor")
    s.op("create", "sam.okafor", gap=(3, 6), session="s-0202", layer="Inspections", globalId=I_backdated,
         parent={"relationship": "Tree_Inspections", "globalId": T_A},
         attributes={"CollectedBy": "Jordan Alvarez"})
    s.op("set", "sam.okafor", field="CollectedDate", value=ms(2025, 3, 2, 19, 15))
    s.op("set", "sam.okafor", field="Condition", value="Good")
    s.op("set", "sam.okafor", field="DBH", value=round(prev["DBH"] + 0.3, 1))
    s.op("set", "sam.okafor", field="Notes", value="Back-entered from 2025 paper form; not the latest inspection.")
    s.op("finish", "sam.okafor")
    # interleaved: dev edits a tree while sam inspects a different tree
    s.op("edit", "dev.patel", gap=(12, 25), session="s-0203", layer="Trees", globalId=T_B)
    s.op("create", "sam.okafor", session="s-0204", layer="Inspections", globalId=I_c,
         parent={"relationship": "Tree_Inspections", "globalId": T_C},
         attributes={"CollectedBy": "Sam Okafor", "CollectedDate": "2026-05-11T16:24:00Z"})
    s.op("set", "dev.patel", session="s-0203", field="SiteWidth", value=6)
    s.op("set", "sam.okafor", session="s-0204", field="Condition", value="Poor")
    s.op("set", "dev.patel", session="s-0203", field="Wires", value=2)
    s.op("set", "sam.okafor", session="s-0204", field="DBH", value=round(kids[T_C][-1]["DBH"] + 0.4, 1))
    s.op("set", "sam.okafor", session="s-0204", field="Notes", value="Bark beetle exit holes on trunk.")
    s.op("finish", "sam.okafor", session="s-0204")
    s.op("finish", "dev.patel", session="s-0203")
    s.op("create", "sam.okafor", gap=(20, 40), session="s-0205", layer="Inspections", globalId=I_n1,
         parent={"relationship": "Tree_Inspections", "globalId": N1},
         attributes={"Condition": "Good", "DBH": 1.6, "CollectedBy": "Sam Okafor",
                     "CollectedDate": ms(2026, 5, 11, 17, 5), "Notes": "Newly planted; watering bag installed."})
    s.op("finish", "sam.okafor")
    S[s.name] = s

    # ---------------------------------------------------------------- 03
    s = Script("03-maintenance.ndjson", datetime(2026, 5, 18, 16, 5, 48, tzinfo=UTC))
    s.op("edit", "maria.lopez", session="s-0301", layer="Trees", globalId=T_M)
    s.op("set", "maria.lopez", field="SiteType", value="Median")
    s.op("set", "maria.lopez", field="SiteWidth", value=12)
    s.op("set", "maria.lopez", field="Wires", value=0)
    s.op("set", "maria.lopez", field="PlantedBy", value="Portland Bureau of Transportation")
    s.op("finish", "maria.lopez")
    kousa = species["Cornus kousa"]
    s.op("edit", "auditor.kim", gap=(5, 12), session="s-0302", layer="Species", globalId=kousa)
    s.op("set", "auditor.kim", field="Edible", value="Yes")
    s.op("set", "auditor.kim", field="CommonName", value="Kousa Dogwood (Chinese Dogwood)")
    s.op("finish", "auditor.kim")
    new_sp = species["Acer rubrum"] if cur_species[T_S] != species["Acer rubrum"] else species["Acer campestre"]
    s.op("edit", "dev.patel", gap=(5, 12), session="s-0303", layer="Trees", globalId=T_S)
    s.op("relate", "dev.patel", relationship="Species_Trees", globalId=new_sp)
    s.op("finish", "dev.patel")
    # dev opens a session on T_D and leaves it open (resumed in 04)
    s.op("edit", "dev.patel", gap=(15, 30), session="s-0304", layer="Trees", globalId=T_D)
    s.op("set", "dev.patel", field="SiteWidth", value=5)
    s.op("set", "dev.patel", field="PlantedBy", value="Neighborhood tree team")
    S[s.name] = s

    # ---------------------------------------------------------------- 04
    s = Script("04-resume-and-photos.ndjson", datetime(2026, 5, 25, 15, 12, 30, tzinfo=UTC))
    s.op("resume", "dev.patel", session="s-0304")
    s.op("set", "dev.patel", field="SiteType", value="Yard")
    A5 = photo(s, "dev.patel", "crown-from-street.jpg", "medium")
    s.op("finish", "dev.patel")
    s.op("edit", "maria.lopez", gap=(10, 20), session="s-0401", layer="Trees", globalId=N1)
    s.op("renameAttachment", "maria.lopez", attachmentId=A1, name="white-oak-planting-day.jpg")
    A4 = photo(s, "maria.lopez", "IMG_2311.jpg", "medium")
    s.op("finish", "maria.lopez")
    s.op("edit", "maria.lopez", gap=(8, 15), session="s-0402", layer="Trees", globalId=N2)
    s.op("detach", "maria.lopez", attachmentId=A2)
    A2b = photo(s, "maria.lopez", "red-maple-staked.jpg", "large")
    s.op("finish", "maria.lopez")
    S[s.name] = s

    # ---------------------------------------------------------------- 05
    s = Script("05-cancel-and-abandon.ndjson", datetime(2026, 6, 1, 16, 20, 0, tzinfo=UTC))
    s.op("edit", "sam.okafor", session="s-0501", layer="Trees", globalId=T_E)
    s.op("set", "sam.okafor", field="Condition", value="Dead")
    s.op("set", "sam.okafor", field="DBH", value=0)
    s.op("set", "sam.okafor", field="SiteWidth", value=2.5)
    photo(s, "sam.okafor", "wrong-tree.jpg", "small")
    s.op("set", "sam.okafor", field="Wires", value=2)
    s.op("cancel", "sam.okafor")
    I_e = new_guid()
    s.op("create", "sam.okafor", gap=(2, 5), session="s-0502", layer="Inspections", globalId=I_e,
         parent={"relationship": "Tree_Inspections", "globalId": T_E},
         attributes={"Condition": "Fair", "DBH": round(kids[T_E][-1]["DBH"] + 0.5, 1), "CollectedBy": "Sam Okafor",
                     "CollectedDate": "2026-06-01T16:41:00Z", "Notes": "Re-checked after cancelled edit."})
    s.op("finish", "sam.okafor")
    N4 = new_guid()
    x, y = random_point(index, within=(0, 2))
    s.op("create", "maria.lopez", gap=(4, 9), session="s-0503", layer="Trees", globalId=N4, geometry=geom(x, y),
         attributes={"PlantedBy": "Friends of Trees", "PlantedDate": "2026-05-30T00:00:00Z", "SiteType": "Yard",
                     "SiteWidth": 8, "Wires": 1, "DBH": 1.0})
    s.op("relate", "maria.lopez", relationship="Species_Trees", globalId=species["Cercis canadensis"])
    s.op("finish", "maria.lopez")
    # sam opens a session on T_G and never finishes it (abandoned in 07)
    s.op("edit", "sam.okafor", gap=(20, 35), session="s-0504", layer="Trees", globalId=T_G)
    s.op("set", "sam.okafor", field="SiteWidth", value=9)
    S[s.name] = s

    # ---------------------------------------------------------------- 06
    s = Script("06-inspection-updates.ndjson", datetime(2026, 6, 8, 15, 30, 0, tzinfo=UTC))
    h_latest, h_oldest = kids[T_H][-1], kids[T_H][0]
    s.op("edit", "maria.lopez", session="s-0601", layer="Inspections", globalId=h_latest["GlobalID"])
    s.op("set", "maria.lopez", field="Condition", value="Poor")
    s.op("set", "maria.lopez", field="Notes", value="Corrected: root rot found at flare; condition downgraded.")
    s.op("finish", "maria.lopez")
    s.op("edit", "maria.lopez", gap=(3, 7), session="s-0602", layer="Inspections", globalId=h_oldest["GlobalID"])
    s.op("set", "maria.lopez", field="CollectedDate", value=ms(2026, 6, 8, 15, 0))
    s.op("set", "maria.lopez", field="DBH", value=round(h_latest["DBH"] + 0.7, 1))
    s.op("set", "maria.lopez", field="Condition", value="Fair")
    s.op("set", "maria.lopez", field="Notes", value="Re-dated: this record is today's re-inspection.")
    s.op("finish", "maria.lopez")
    s.op("delete", "dev.patel", gap=(10, 20), layer="Inspections", globalId=I_new_latest)
    s.op("edit", "auditor.kim", gap=(5, 10), session="s-0603", layer="Trees", globalId=T_K)
    s.op("set", "auditor.kim", field="Address", value=trees[[t["GlobalID"] for t in trees].index(T_K)]["Address"]
         .replace(", Portland", " (rear), Portland"))
    s.op("set", "auditor.kim", field="Neighborhood",
         value=trees[[t["GlobalID"] for t in trees].index(T_K)]["Neighborhood"])
    s.op("finish", "auditor.kim")
    pear = species["Pyrus calleryana"]
    s.op("edit", "dev.patel", gap=(5, 10), session="s-0604", layer="Species", globalId=pear)
    s.op("set", "dev.patel", field="ScientificName", value="Pyrus calleryana 'Chanticleer'")
    s.op("set", "dev.patel", field="FunctionalType", value="Broadleaf Deciduous")
    s.op("finish", "dev.patel")
    S[s.name] = s

    # ---------------------------------------------------------------- 07
    s = Script("07-removals.ndjson", datetime(2026, 6, 15, 16, 0, 0, tzinfo=UTC))
    s.op("abandon", "sam.okafor", session="s-0504")
    s.op("edit", "maria.lopez", gap=(5, 10), session="s-0701", layer="Trees", globalId=T_G)
    s.op("set", "maria.lopez", field="SiteWidth", value=9.5)
    s.op("set", "maria.lopez", field="Condition", value="Fair")
    s.op("finish", "maria.lopez")
    s.op("delete", "dev.patel", gap=(8, 15), layer="Trees", globalId=T_I)
    s.op("edit", "maria.lopez", gap=(8, 15), session="s-0702", layer="Trees", globalId=N1)
    s.op("detach", "maria.lopez", attachmentId=A4)
    s.op("renameAttachment", "maria.lopez", attachmentId=A1, name="oregon-white-oak-2026-05-04.jpg")
    s.op("finish", "maria.lopez")
    s.op("edit", "sam.okafor", gap=(5, 10), session="s-0703", layer="Inspections", globalId=I_c)
    s.op("set", "sam.okafor", field="Notes", value="Bark beetle exit holes on trunk; flagged for removal review.")
    s.op("finish", "sam.okafor")
    S[s.name] = s

    # ---------------------------------------------------------------- 08
    s = Script("08-wrap-up.ndjson", datetime(2026, 6, 22, 17, 10, 0, tzinfo=UTC))
    N5_bad, N5 = new_guid(), new_guid()
    x, y = random_point(index, within=(1, 3))
    s.op("create", "auditor.kim", session="s-0801", layer="Trees", globalId=N5_bad, geometry=geom(x, y),
         attributes={"SiteType": "Sidewalk"})
    s.op("relate", "auditor.kim", relationship="Species_Trees", globalId=species["Ginkgo biloba"])
    s.op("set", "auditor.kim", field="DBH", value=3)
    s.op("cancel", "auditor.kim")
    x, y = random_point(index, within=(1, 3))
    s.op("create", "auditor.kim", gap=(2, 4), session="s-0802", layer="Trees", globalId=N5, geometry=geom(x, y),
         attributes={"SiteType": "Sidewalk", "SiteWidth": 5, "Wires": 0, "PlantedBy": "Unknown", "DBH": 3})
    s.op("relate", "auditor.kim", relationship="Species_Trees", globalId=species["Ginkgo biloba"])
    photo(s, "auditor.kim", "ginkgo.jpg", "medium")
    s.op("finish", "auditor.kim")
    I_k1, I_k2, I_k3 = new_guid(), new_guid(), new_guid()
    s.op("create", "auditor.kim", gap=(3, 6), session="s-0803", layer="Inspections", globalId=I_k1,
         parent={"relationship": "Tree_Inspections", "globalId": N5},
         attributes={"Condition": "Good", "DBH": 3.1, "CollectedBy": "Kim Auditor",
                     "CollectedDate": "2026-06-22T17:20:00Z"})
    photo(s, "auditor.kim", "bark-detail.jpg", "large")
    s.op("finish", "auditor.kim")
    # maria works on another tree in parallel while kim back-enters an older inspection
    s.op("edit", "maria.lopez", gap=(1, 3), session="s-0804", layer="Trees", globalId=N2)
    s.op("create", "auditor.kim", session="s-0805", layer="Inspections", globalId=I_k2,
         parent={"relationship": "Tree_Inspections", "globalId": N5},
         attributes={"CollectedBy": "Kim Auditor", "CollectedDate": ms(2026, 6, 15, 18, 0)})
    s.op("renameAttachment", "maria.lopez", session="s-0804", attachmentId=A2b, name="red-maple-2026-05.jpg")
    s.op("set", "auditor.kim", session="s-0805", field="Condition", value="Poor")
    s.op("set", "auditor.kim", session="s-0805", field="DBH", value=2.9)
    s.op("set", "maria.lopez", session="s-0804", field="Wires", value=0)
    s.op("finish", "auditor.kim", session="s-0805")
    s.op("finish", "maria.lopez", session="s-0804")
    s.op("create", "sam.okafor", gap=(10, 20), session="s-0806", layer="Inspections", globalId=I_k3,
         parent={"relationship": "Tree_Inspections", "globalId": N3},
         attributes={"Condition": "Good", "DBH": 2.2, "CollectedBy": "Sam Okafor",
                     "CollectedDate": ms(2026, 6, 22, 18, 5), "Notes": "First fruit set."})
    s.op("finish", "sam.okafor")
    s.op("edit", "sam.okafor", gap=(2, 4), session="s-0807", layer="Inspections", globalId=I_n1)
    s.op("set", "sam.okafor", field="DBH", value=1.7)
    s.op("finish", "sam.okafor")
    S[s.name] = s

    picks = {"T_A": T_A, "T_B": T_B, "T_C": T_C, "T_D": T_D, "T_E": T_E, "T_G": T_G, "T_H": T_H, "T_I": T_I,
             "T_M": T_M, "T_S": T_S, "T_K": T_K, "N1": N1, "N2": N2, "N3": N3, "N4": N4, "N5": N5,
             "I_new_latest": I_new_latest, "I_backdated": I_backdated, "A1": A1, "A2": A2, "A4": A4, "A5": A5}
    return S, picks


def build_invalid(base, index):
    species = {a["attributes"]["ScientificName"]: a["attributes"]["GlobalID"] for a in base["Species"]["features"]}
    trees = [f["attributes"]["GlobalID"] for f in base["Trees"]["features"]]
    hoods = [f["attributes"]["GlobalID"] for f in base["Neighborhoods"]["features"]]
    t0 = datetime(2026, 5, 6, 17, 0, 0, tzinfo=UTC)
    out, expected = {}, {}

    def script(name, contains, build):
        s = Script(name, t0 + timedelta(hours=len(out)))
        fail_line = build(s)
        out[name] = s
        expected[name] = {"line": fail_line, "contains": contains}

    def tree():
        return rng.choice(trees)

    def b_coded(s):
        s.op("edit", "maria.lopez", session="s-x01", layer="Trees", globalId=tree())
        s.op("set", "maria.lopez", field="SiteType", value="Park")
        s.op("set", "maria.lopez", field="Condition", value="Excellent")
        return 3
    script("coded-domain.ndjson", "domain", b_coded)

    def b_coded_int(s):
        s.op("edit", "dev.patel", session="s-x02", layer="Trees", globalId=tree())
        s.op("set", "dev.patel", field="Wires", value=3)
        return 2
    script("coded-domain-smallint.ndjson", "domain", b_coded_int)

    def b_range(s):
        s.op("edit", "sam.okafor", session="s-x03", layer="Trees", globalId=tree())
        s.op("set", "sam.okafor", field="SiteWidth", value=50)
        s.op("set", "sam.okafor", field="DBH", value=250.5)
        return 3
    script("range-domain.ndjson", "range", b_range)

    def b_range_insp(s):
        s.op("create", "sam.okafor", session="s-x04", layer="Inspections", globalId=new_guid(),
             parent={"relationship": "Tree_Inspections", "globalId": tree()},
             attributes={"CollectedBy": "Sam Okafor", "CollectedDate": "2026-05-06T20:00:00Z"})
        s.op("set", "sam.okafor", field="DBH", value=-1)
        return 2
    script("range-domain-negative.ndjson", "range", b_range_insp)

    def b_length(s):
        s.op("edit", "maria.lopez", session="s-x05", layer="Trees", globalId=tree())
        s.op("set", "maria.lopez", field="Address", value="1234 SE Belmont St, Portland, OR 97214 " + "x" * 230)
        return 2
    script("string-too-long.ndjson", "length", b_length)

    def b_ro_gid(s):
        s.op("edit", "auditor.kim", session="s-x06", layer="Trees", globalId=tree())
        s.op("set", "auditor.kim", field="GlobalID", value=new_guid())
        return 2
    script("read-only-globalid.ndjson", "read-only", b_ro_gid)

    def b_ro_creator(s):
        s.op("edit", "auditor.kim", session="s-x07", layer="Species", globalId=species["Acer rubrum"])
        s.op("set", "auditor.kim", field="Creator", value="auditor.kim")
        return 2
    script("read-only-creator.ndjson", "read-only", b_ro_creator)

    def b_unknown(s):
        s.op("edit", "dev.patel", session="s-x08", layer="Trees", globalId=tree())
        s.op("set", "dev.patel", field="Height", value=40)
        return 2
    script("unknown-field.ndjson", "unknown field", b_unknown)

    def b_nopopup(s):
        s.op("edit", "maria.lopez", session="s-x09", layer="Neighborhoods", globalId=rng.choice(hoods))
        return 1
    script("edit-no-popup.ndjson", "pop-up", b_nopopup)

    def b_family(s):
        s.op("edit", "auditor.kim", session="s-x10", layer="Species", globalId=species["Ginkgo biloba"])
        s.op("set", "auditor.kim", field="Genus", value="Ginkgo")
        s.op("set", "auditor.kim", field="Family", value="Ginkgoales")
        return 3
    script("popup-not-editable.ndjson", "not editable", b_family)

    def b_second(s):
        g = tree()
        s.op("edit", "maria.lopez", session="s-x11", layer="Trees", globalId=g)
        s.op("set", "maria.lopez", field="SiteWidth", value=7)
        s.op("edit", "dev.patel", session="s-x12", layer="Trees", globalId=g)
        return 3
    script("second-open-session.ndjson", "open session", b_second)

    def b_child(s):
        g = tree()
        s.op("edit", "maria.lopez", session="s-x13", layer="Trees", globalId=g)
        s.op("create", "sam.okafor", session="s-x14", layer="Inspections", globalId=new_guid(),
             parent={"relationship": "Tree_Inspections", "globalId": g},
             attributes={"Condition": "Good", "CollectedBy": "Sam Okafor", "CollectedDate": "2026-05-06T22:05:00Z"})
        return 2
    script("child-while-parent-open.ndjson", "open session", b_child)

    def b_composite(s):
        s.op("create", "sam.okafor", session="s-x15", layer="Inspections", globalId=new_guid(),
             attributes={"Condition": "Fair", "CollectedBy": "Sam Okafor"})
        s.op("set", "sam.okafor", field="CollectedDate", value=ms(2026, 5, 6, 23, 0))
        s.op("finish", "sam.okafor")
        return 3
    script("orphan-inspection.ndjson", "composite", b_composite)

    def b_relate(s):
        s.op("edit", "dev.patel", session="s-x16", layer="Trees", globalId=tree())
        s.op("relate", "dev.patel", relationship="Species_Trees", globalId=new_guid())
        return 2
    script("relate-missing-species.ndjson", "does not exist", b_relate)

    def b_att_species(s):
        s.op("edit", "auditor.kim", session="s-x17", layer="Species", globalId=species["Malus domestica"])
        s.op("attach", "auditor.kim", attachmentId=new_guid(), name="apple-leaf.jpg", contentType="image/jpeg",
             dataBase64=fake_jpeg(), preferredSize="medium")
        return 2
    script("attach-to-species.ndjson", "attachments", b_att_species)

    def b_att_name(s):
        s.op("edit", "maria.lopez", session="s-x18", layer="Trees", globalId=tree())
        s.op("attach", "maria.lopez", attachmentId=new_guid(), name="../x.jpg", contentType="image/jpeg",
             dataBase64=fake_jpeg(), preferredSize="medium")
        return 2
    script("attach-bad-name.ndjson", "name", b_att_name)

    def b_del_nb(s):
        s.op("delete", "dev.patel", layer="Neighborhoods", globalId=rng.choice(hoods))
        return 1
    script("delete-neighborhood.ndjson", "capabilit", b_del_nb)

    def b_create_nb(s):
        r = [[-122.6, 45.5], [-122.6, 45.501], [-122.599, 45.501], [-122.599, 45.5], [-122.6, 45.5]]
        s.op("create", "dev.patel", session="s-x19", layer="Neighborhoods", globalId=new_guid(),
             geometry={"rings": [r], "spatialReference": {"wkid": 4326}},
             attributes={"Name": "New Neighborhood", "Coalition": "Southeast Uplift"})
        return 1
    script("create-neighborhood.ndjson", "capabilit", b_create_nb)
    return out, expected


# --------------------------------------------------------------------------
# README
# --------------------------------------------------------------------------
README = """# Trees of Portland fixtures

Generated by `tools/gen-fixtures.py` (Python 3.11, stdlib only, seeded `random.Random(42)`,
no network). Regenerate from the repository root with:

    python3 tools/gen-fixtures.py

Do not edit these files by hand; change the generator and re-run it (output is deterministic).
The generator ends with a self-check (tiling, containment, nearest address, and a reference
replay of every script line).

| File | What it is |
|------|------------|
| `service.json` | `FeatureServer/layers?f=json` response: layers `Trees` (0, point, attachments), `Neighborhoods` (1, polygon, capabilities `Query,Update`: updatable in the service, but it has no pop-up), tables `Species` (2) and `Inspections` (3, attachments). Field objects with codedValue/range domains, `editFieldsInfo`, GlobalID-keyed relationships `Species_Trees` (id 0, not composite) and `Tree_Inspections` (id 1, composite), listed on both sides. |
| `webmap.json` | Web map: operational layers Trees and Neighborhoods (Neighborhoods has no `popupInfo`, `disablePopup: true`), tables Species and Inspections, each with pop-up `fieldInfos` (`isEditable`/`visible`). Species `Family` is editable in the service but `isEditable: false` in the pop-up. Key fields `SpeciesGlobalID`/`TreeGlobalID` are hidden and not pop-up editable (they change through `relate` / `parent`). |
| `rules.json` | Custom behaviour rules: latest-inspection rollup, point-in-polygon neighbourhood lookup, offline reverse geocode. |
| `addresses.json` | {n_addr} Portland street addresses (real NE/SE street names, avenue numbers and ZIPs approximated from position) on a ~280 m grid; every point of the area is within {max_gap:.0f} m (haversine, R = 6371008.8 m) of an address. |
| `baseline/*.json` | Esri JSON feature sets (`query?f=json` shape) for Species ({n_sp}), Neighborhoods ({n_nb}, a 4x3 grid of rectangles tiling lon {xmin}..{xmax}, lat {ymin}..{ymax}), Trees ({n_tr}) and Inspections ({n_in}). Dates are epoch ms (UTC). Trees' `Address` = nearest address (unambiguous by >= 2 m and 2 %), `Neighborhood` = containing polygon, `Condition`/`DBH` = latest inspection (by `CollectedDate`) when the tree has inspections. |
| `scripts/NN-*.ndjson` | Valid edit scripts, applied in filename order on top of the baseline: new trees with species relate and photos, attribute edits, species change, inspections (incl. a back-dated one that must not win the rollup, a re-dated one that must win, a deleted latest one), a cancelled session, attachment rename/detach in later sessions, cascade delete of a tree with inspections, species table edits, a session left open in 03 and resumed in 04, a session left open in 05 and abandoned in 07, interleaved sessions of different actors. |
| `scripts/invalid/*.ndjson` | One rule violation each, applied on top of the baseline alone. `expected.json` maps file -> `{{"line": N, "contains": "..."}}` (1-based failing line; lower-case substring of the error). |

Notes and assumptions:

* Distances: haversine on a sphere (R = 6371008.8 m). Nearest addresses of trees (baseline and
  script-created) are unambiguous under any reasonable metric (2nd nearest is >= 2 m and >= 2 % farther).
* Trees created by scripts omit `Neighborhood`/`Address`; the rules fill them.
* Times in scripts (`at`) strictly increase across all valid scripts, 2026-05-04 .. 2026-06-22.
* `set` date values appear both as epoch ms numbers and ISO-8601 strings.
* An actor never has more than one open session in the valid scripts, except that sessions left
  open (03 -> 04, 05 -> 07) belong to actors who do nothing else until they `resume` / `abandon`.
  Interleaved sessions name their `session` on every line.
* EditLog checks capabilities first, then the pop-up: `edit` on Neighborhoods (Update allowed, no pop-up)
  fails with a pop-up error, `create`/`delete` on Neighborhoods fail with a capabilities error.
"""


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def main():
    service = build_service()
    webmap = build_webmap()
    addresses = build_addresses()
    index = AddressIndex(addresses)
    species, hoods, trees, inspections = build_baseline(index, addresses)
    baseline = {
        "Species": feature_set("Species", species),
        "Neighborhoods": feature_set("Neighborhoods", hoods, "esriGeometryPolygon"),
        "Trees": feature_set("Trees", trees, "esriGeometryPoint"),
        "Inspections": feature_set("Inspections", inspections),
    }
    scripts, picks = build_scripts(baseline, index)
    invalid, expected = build_invalid(baseline, index)

    # ---------------- write
    for sub in ("baseline", "scripts"):
        if (OUT / sub).exists():
            shutil.rmtree(OUT / sub)
    OUT.mkdir(parents=True, exist_ok=True)
    write_json(OUT / "service.json", service)
    write_json(OUT / "webmap.json", webmap)
    write_json(OUT / "rules.json", RULES)
    write_json(OUT / "addresses.json", {"addresses": addresses})
    for n, fs in baseline.items():
        write_json(OUT / "baseline" / f"{n}.json", fs)
    (OUT / "scripts" / "invalid").mkdir(parents=True, exist_ok=True)
    for name, s in scripts.items():
        (OUT / "scripts" / name).write_text(s.text(), encoding="utf-8")
    for name, s in invalid.items():
        (OUT / "scripts" / "invalid" / name).write_text(s.text(), encoding="utf-8")
    write_json(OUT / "scripts" / "invalid" / "expected.json", expected)

    max_gap = verify(service, webmap, addresses, index, picks)
    (OUT / "README.md").write_text(README.format(
        n_addr=len(addresses), max_gap=math.ceil(max_gap), n_sp=len(species), n_nb=len(hoods), n_tr=len(trees),
        n_in=len(inspections), xmin=XMIN, xmax=XMAX, ymin=YMIN, ymax=YMAX), encoding="utf-8")
    print("ok")


# --------------------------------------------------------------------------
# verification (reads the written files back)
# --------------------------------------------------------------------------
def verify(service, webmap, addresses, index, picks):
    def load(p):
        return json.loads((OUT / p).read_text(encoding="utf-8"))

    assert load("service.json") == service and load("webmap.json") == webmap
    assert load("rules.json") == RULES
    base = {n: load(f"baseline/{n}.json") for n in ("Species", "Neighborhoods", "Trees", "Inspections")}
    sp, nb, tr, ins = (base[n]["features"] for n in ("Species", "Neighborhoods", "Trees", "Inspections"))

    # counts
    assert len(sp) >= 30 and len(nb) >= 10 and len(tr) >= 200 and 140 <= len(ins) <= 160
    assert len(addresses) >= 400 and len({a["address"] for a in addresses}) == len(addresses)
    for n, fs in base.items():
        oids = [f["attributes"]["OBJECTID"] for f in fs["features"]]
        assert oids == list(range(1, len(oids) + 1)), n
        for f in fs["features"]:
            a = f["attributes"]
            assert GUID_RE.match(a["GlobalID"]), a["GlobalID"]
            assert set(a) == {fd["name"] for fd in fs["fields"]}, n
            for k in ("CreationDate", "EditDate"):
                assert ms(2024, 1, 1) <= a[k] < ms(2025, 1, 1), (n, k)
            assert a["EditDate"] >= a["CreationDate"]
    all_g = [f["attributes"]["GlobalID"] for fs in base.values() for f in fs["features"]]
    assert len(set(all_g)) == len(all_g)

    # polygons tile the rectangle: closed, clockwise, no overlaps, areas sum to the rectangle
    rects = []
    for f in nb:
        rings = f["geometry"]["rings"]
        assert len(rings) == 1
        ring = rings[0]
        assert ring[0] == ring[-1] and len(ring) == 5
        assert signed_area(ring) < 0, "outer rings must be clockwise"
        xs, ys = [p[0] for p in ring], [p[1] for p in ring]
        assert all(v == round(v, 6) for v in xs + ys)
        rects.append((min(xs), min(ys), max(xs), max(ys)))
    for i in range(len(rects)):
        for j in range(i + 1, len(rects)):
            a, b = rects[i], rects[j]
            ox = min(a[2], b[2]) - max(a[0], b[0])
            oy = min(a[3], b[3]) - max(a[1], b[1])
            assert ox <= 1e-12 or oy <= 1e-12, "overlap"
    area = sum((r[2] - r[0]) * (r[3] - r[1]) for r in rects)
    assert abs(area - (XMAX - XMIN) * (YMAX - YMIN)) < 1e-12
    assert min(r[0] for r in rects) == XMIN and max(r[2] for r in rects) == XMAX
    assert min(r[1] for r in rects) == YMIN and max(r[3] for r in rects) == YMAX
    # every edge vertex is shared (grid): each x edge coordinate used by rectangles is one of the grid lines
    assert {r[0] for r in rects} | {r[2] for r in rects} == set(X_EDGES)
    assert {r[1] for r in rects} | {r[3] for r in rects} == set(Y_EDGES)

    # every tree inside exactly one polygon, Neighborhood/Address consistent
    sp_g = {f["attributes"]["GlobalID"] for f in sp}
    for f in tr:
        a, g = f["attributes"], f["geometry"]
        x, y = g["x"], g["y"]
        hits = [h["attributes"]["Name"] for h in nb if point_in_ring(x, y, h["geometry"]["rings"][0])]
        edges = [h for h in nb if on_ring_edge(x, y, h["geometry"]["rings"][0])]
        assert len(hits) == 1 and not edges, (a["OBJECTID"], hits)
        assert a["Neighborhood"] == hits[0]
        (d1, k), (d2, _) = index.nearest2(x, y, brute=True)
        assert addresses[k]["address"] == a["Address"] and d1 <= 250 and d2 - d1 >= 2.0
        assert a["SpeciesGlobalID"] in sp_g
        assert a["Condition"] in CONDITIONS and 0 <= a["DBH"] <= 200 and 0 <= a["SiteWidth"] <= 50
        assert a["PlantedDate"] < a["CreationDate"]
    # bucketed lookup agrees with brute force on the trees
    # latest inspection rollup
    tg = {f["attributes"]["GlobalID"]: f["attributes"] for f in tr}
    per = defaultdict(list)
    for f in ins:
        a = f["attributes"]
        assert a["TreeGlobalID"] in tg
        per[a["TreeGlobalID"]].append(a)
    for t, lst in per.items():
        dates = [a["CollectedDate"] for a in lst]
        assert len(set(dates)) == len(dates)
        last = max(lst, key=lambda a: a["CollectedDate"])
        assert (tg[t]["Condition"], tg[t]["DBH"]) == (last["Condition"], last["DBH"])
    counts = Counter(len(per[t]) for t in tg)
    assert counts[0] > 0 and max(counts) >= 3

    # address coverage: sample the whole rectangle every ~20 m (plus its boundary)
    nx, ny = 470, 335
    max_gap = 0.0
    for i in range(nx + 1):
        x = XMIN + (XMAX - XMIN) * i / nx
        for j in range(ny + 1):
            y = YMIN + (YMAX - YMIN) * j / ny
            d1, _ = index.nearest1(x, y)
            if d1 > max_gap:
                max_gap = d1
    assert max_gap <= 235, max_gap    # sampling step <= ~20 m, so true max < 250 m

    # web map / service consistency
    wm_titles = {e["title"]: e for e in webmap["operationalLayers"] + webmap["tables"]}
    assert "popupInfo" not in wm_titles["Neighborhoods"]
    for name in ("Trees", "Species", "Inspections"):
        pi = wm_titles[name]["popupInfo"]
        assert [fi["fieldName"] for fi in pi["fieldInfos"]] == [f["name"] for f in FIELDS[name]]
        for fi in pi["fieldInfos"]:
            if fi["fieldName"] in SYSTEM_FIELDS:
                assert not fi["visible"] and not fi["isEditable"]
    fam = [fi for fi in wm_titles["Species"]["popupInfo"]["fieldInfos"] if fi["fieldName"] == "Family"][0]
    assert fam["isEditable"] is False
    tfi = {fi["fieldName"]: fi for fi in wm_titles["Trees"]["popupInfo"]["fieldInfos"]}
    assert tfi["Address"]["isEditable"] and tfi["Neighborhood"]["isEditable"]

    # ---- replay valid scripts (filename order) with the reference simulator
    names = sorted(p.name for p in (OUT / "scripts").glob("*.ndjson"))
    assert names == sorted(n for n in names) and len(names) == 8
    sim = Sim(service, webmap, base, index, addresses, strict=True)
    for name in names:
        lines = (OUT / "scripts" / name).read_text(encoding="utf-8").splitlines()
        first = json.loads(lines[0])
        assert {"actor", "device", "at"} <= set(first), name
        for ln, text in enumerate(lines, 1):
            obj = json.loads(text)
            at = obj.get("at")
            assert at is None or (at.endswith("Z") and "2026-05" <= at[:7] <= "2026-06"), at
            try:
                sim.apply(obj)
            except SimError as e:
                raise AssertionError(f"{name}:{ln}: {e}") from None
    assert not sim.sessions, f"sessions left open at the end: {list(sim.sessions)}"
    st = sim.stats
    for op in ("create", "edit", "set", "relate", "attach", "renameAttachment", "detach", "finish", "cancel",
               "resume", "abandon", "delete"):
        assert st[op] > 0, op
    assert st["create:Trees"] >= 4 and st["create:Inspections:parent"] >= 5 and st["edit:Species"] >= 2
    assert st["edit:Inspections"] >= 2 and st["delete:Inspections"] >= 1 and st["delete:Trees"] >= 1
    assert st["cascade-deleted-inspections"] >= 2
    assert len({json.loads(l).get("actor") for n in names
                for l in (OUT / "scripts" / n).read_text().splitlines()} - {None}) == 4
    # rollup semantics exercised: back-dated inspection does not win; deleting the latest reverts
    T_A = picks["T_A"]
    assert sim.features["Inspections"].get(picks["I_new_latest"]) is None
    ta = sim.features["Trees"][T_A]
    bd = sim.features["Inspections"][picks["I_backdated"]]
    assert (ta["Condition"], ta["DBH"]) == (bd["Condition"], bd["DBH"])
    assert picks["T_I"] not in sim.features["Trees"]
    assert all(a["TreeGlobalID"] != picks["T_I"] for a in sim.features["Inspections"].values())
    assert set(sim.attachments[picks["N1"]].values()) == {"oregon-white-oak-2026-05-04.jpg"}

    # ---- invalid scripts: valid up to line N, failing at N with the expected substring
    exp = load("scripts/invalid/expected.json")
    inv = sorted(p.name for p in (OUT / "scripts" / "invalid").glob("*.ndjson"))
    assert sorted(exp) == inv
    for name in inv:
        sim = Sim(service, webmap, base, index, addresses, strict=False)
        lines = (OUT / "scripts" / "invalid" / name).read_text(encoding="utf-8").splitlines()
        assert {"actor", "device", "at"} <= set(json.loads(lines[0]))
        want = exp[name]
        assert want["contains"] == want["contains"].lower()
        assert len(lines) == want["line"], f"{name}: nothing may follow the failing line"
        for ln, text in enumerate(lines, 1):
            obj = json.loads(text)
            try:
                sim.apply(obj)
            except SimError as e:
                assert ln == want["line"], f"{name}: failed early at {ln}: {e}"
                assert want["contains"] in str(e).lower(), f"{name}: {e!r} lacks {want['contains']!r}"
                break
        else:
            raise AssertionError(f"{name}: did not fail")
    print(f"addresses={len(addresses)} max_gap={max_gap:.1f}m species={len(sp)} hoods={len(nb)} "
          f"trees={len(tr)} inspections={len(ins)} trees_with_inspections={sum(1 for v in per.values() if v)}")
    return max_gap


if __name__ == "__main__":
    sys.exit(main())
