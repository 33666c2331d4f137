#!/usr/bin/env python3
"""Generate large, valid EditLog workloads from the Trees of Portland fixtures.

Python 3.11, standard library only.  Deterministic: the output depends only on the
fixtures and the arguments (``--seed`` first of all).

Two kinds of output:

(a) Edit scripts (NDJSON, schemas/script-line.schema.json, the format of
    Sources/EditLogCore/Script/ScriptParser.swift) of realistic field sessions on
    the *baseline* trees, species and inspections::

        python3 tools/gen-workload.py --seed 7 --scripts 3 --sessions 300 --out /tmp/wl

    writes /tmp/wl/wl-s7-000.ndjson .. wl-s7-002.ndjson.  Every script is valid on
    top of ``editlog init`` with the fixture baseline, and any number of generated
    scripts (of any seed / index) can be recorded one after another in any order:
    every session is finished or canceled inside its script, nothing is deleted,
    and session ids / GlobalIDs / attachment ids contain the seed and the script
    index.  (Use a distinct --first-index when generating more scripts of one seed
    later.)

(b) A large Trees baseline feature set (the shape of baseline/Trees.json)::

        python3 tools/gen-workload.py --seed 7 --baseline-trees 20000 --out /tmp/Trees-20k.json

    Fresh GlobalIDs, points inside the neighbourhood grid (never on an edge), the
    containing neighbourhood's name, the nearest fixture address, species from
    Species.json.  Load it with ``editlog init ... --data Trees=/tmp/Trees-20k.json``.

``--check`` records the generated scripts (or loads the baseline) with the real CLI
(``--editlog``, default .build/debug/editlog) in a temporary directory and runs
``editlog verify``; it exits non-zero if anything is rejected.

The module is also imported by tools/crash-harness.py (``generate_script``,
``generate_baseline_trees``).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FIXTURES = ROOT / "Fixtures" / "trees-of-portland"

# Layers, relationships and the fields a pop-up may stage (editable in the service AND
# isEditable in the web map's pop-up); checked against the fixtures at load time.
TREE_FIELDS = ["PlantedBy", "PlantedDate", "SiteWidth", "SiteType", "Wires", "Condition", "DBH", "Address"]
INSPECTION_FIELDS = ["Condition", "DBH", "CollectedBy", "CollectedDate", "Notes"]
SPECIES_FIELDS = ["FunctionalType", "Edible", "Genus", "ScientificName", "CommonName"]

ACTORS = [
    ("maria.lopez", "ipad-07"), ("dev.patel", "iphone-12"), ("sam.okafor", "iphone-15"),
    ("auditor.kim", "surface-03"), ("li.chen", "ipad-11"), ("rosa.diaz", "pixel-8"),
    ("tom.berg", "iphone-13"), ("ana.silva", "galaxy-tab-s9"),
]
PLANTERS = ["Friends of Trees", "Portland Parks & Recreation", "Property owner", "Urban Forestry volunteers",
            "Neighborhood tree team", "PBOT contractor"]
NOTES = ["Girdling root at base.", "Codominant stems, monitor.", "Pruned for clearance.", "Mulch ring refreshed.",
         "Minor bark damage from mower.", "Watering bag installed.", "Leaning slightly toward street.",
         "Canopy thin on south side.", "Healthy new growth.", "Stake removed."]


class Fixtures:
    """The parts of the fixtures a workload needs."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.service = json.loads((self.path / "service.json").read_text())
        self.webmap = json.loads((self.path / "webmap.json").read_text())
        base = self.path / "baseline"
        self.trees_fs = json.loads((base / "Trees.json").read_text())
        self.species_fs = json.loads((base / "Species.json").read_text())
        self.inspections_fs = json.loads((base / "Inspections.json").read_text())
        self.neighborhoods_fs = json.loads((base / "Neighborhoods.json").read_text())
        self.addresses = json.loads((self.path / "addresses.json").read_text())["addresses"]

        layers = {l["name"]: l for l in self.service.get("layers", []) + self.service.get("tables", [])}
        self.layers = layers
        self.fields = {name: {f["name"]: f for f in l["fields"]} for name, l in layers.items()}
        popup = {}
        for l in self.webmap.get("operationalLayers", []) + self.webmap.get("tables", []):
            pi = l.get("popupInfo")
            if pi:
                popup[l["title"]] = {fi["fieldName"]: bool(fi.get("isEditable")) for fi in pi.get("fieldInfos", [])}
        self.popup = popup
        for layer, names in (("Trees", TREE_FIELDS), ("Inspections", INSPECTION_FIELDS), ("Species", SPECIES_FIELDS)):
            for n in names:
                if not self.stageable(layer, n):
                    raise SystemExit(f"gen-workload: {layer}.{n} is not editable in both the service and the pop-up")

        self.tree_ids = [f["attributes"]["GlobalID"] for f in self.trees_fs["features"]]
        self.species_ids = [f["attributes"]["GlobalID"] for f in self.species_fs["features"]]
        self.inspection_ids = [f["attributes"]["GlobalID"] for f in self.inspections_fs["features"]]
        self.site_types = self.coded("Trees", "SiteType")
        self.conditions = self.coded("Trees", "Condition")
        self.wires = self.coded("Trees", "Wires")
        self.functional_types = self.coded("Species", "FunctionalType")
        self.yes_no = self.coded("Species", "Edible")
        self.dbh_range = self.range("Trees", "DBH")
        self.width_range = self.range("Trees", "SiteWidth")
        # Neighbourhood rectangles (the fixture grid tiles the area with axis-aligned rectangles).
        self.hoods = []
        for f in self.neighborhoods_fs["features"]:
            ring = f["geometry"]["rings"][0]
            xs = [p[0] for p in ring]
            ys = [p[1] for p in ring]
            self.hoods.append((min(xs), min(ys), max(xs), max(ys), f["attributes"]["Name"]))
        self.xmin = min(h[0] for h in self.hoods)
        self.ymin = min(h[1] for h in self.hoods)
        self.xmax = max(h[2] for h in self.hoods)
        self.ymax = max(h[3] for h in self.hoods)
        self._addr_index = None

    def stageable(self, layer: str, field: str) -> bool:
        f = self.fields[layer].get(field)
        if not f or not f.get("editable"):
            return False
        if f["type"] in ("esriFieldTypeOID", "esriFieldTypeGlobalID", "esriFieldTypeGUID"):
            return False
        return self.popup.get(layer, {}).get(field, False)

    def coded(self, layer: str, field: str) -> list:
        return [c["code"] for c in self.fields[layer][field]["domain"]["codedValues"]]

    def range(self, layer: str, field: str) -> tuple[float, float]:
        lo, hi = self.fields[layer][field]["domain"]["range"]
        return float(lo), float(hi)

    # -- geography -------------------------------------------------------------------

    def neighborhood(self, x: float, y: float) -> str | None:
        for x0, y0, x1, y1, name in self.hoods:
            if x0 < x < x1 and y0 < y < y1:
                return name
        return None

    def random_point(self, rng: random.Random) -> tuple[float, float]:
        """A point strictly inside one neighbourhood rectangle (>= ~10 m from any edge)."""
        margin = 0.00015
        while True:
            x = round(rng.uniform(self.xmin, self.xmax), 6)
            y = round(rng.uniform(self.ymin, self.ymax), 6)
            if any(x0 + margin < x < x1 - margin and y0 + margin < y < y1 - margin for x0, y0, x1, y1, _ in self.hoods):
                return x, y

    def nearest_address(self, x: float, y: float) -> str:
        if self._addr_index is None:
            idx: dict[tuple[int, int], list] = {}
            for a in self.addresses:
                idx.setdefault((int(a["x"] // 0.004), int(a["y"] // 0.003)), []).append(a)
            self._addr_index = idx
        cx, cy = int(x // 0.004), int(y // 0.003)
        best, best_d = None, float("inf")
        for r in (1, 2, 4):  # 0.004 deg lon ~ 310 m, 0.003 deg lat ~ 333 m; nearest is always within 218 m
            for i in range(cx - r, cx + r + 1):
                for j in range(cy - r, cy + r + 1):
                    for a in self._addr_index.get((i, j), ()):
                        d = haversine(x, y, a["x"], a["y"])
                        if d < best_d:
                            best, best_d = a, d
            if best is not None:
                break
        return best["address"] if best else None


def haversine(x1: float, y1: float, x2: float, y2: float) -> float:
    r = 6371008.8
    p1, p2 = math.radians(y1), math.radians(y2)
    dp, dl = p2 - p1, math.radians(x2 - x1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))


class Ids:
    """Fresh uppercase braced GUIDs: random from the seeded generator, with the last group holding
    the seed tag, the script index and a counter, so ids never repeat across scripts or seeds."""

    def __init__(self, rng: random.Random, seed: int, script: int):
        self.rng = rng
        self.tag = seed & 0xFF
        self.script = script & 0xFFFF
        self.n = 0

    def guid(self) -> str:
        self.n += 1
        h = f"{self.rng.getrandbits(64):016X}"
        v4 = f"4{self.rng.getrandbits(12):03X}"
        var = f"{8 + self.rng.getrandbits(2):X}{self.rng.getrandbits(12):03X}"
        last = f"{self.tag:02X}{self.script:04X}{self.n:06X}"
        return "{" + f"{h[:8]}-{h[8:12]}-{v4}-{var}-{last}" + "}"


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def fake_jpeg(rng: random.Random, lo: int = 120, hi: int = 480) -> str:
    n = rng.randint(lo, hi)
    body = bytes(rng.getrandbits(8) for _ in range(n))
    return base64.b64encode(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00H\x00H\x00\x00" + body + b"\xff\xd9").decode()


def generate_script(fx: Fixtures, seed: int, index: int, sessions: int, attach_rate: float = 0.15,
                    cancel_rate: float = 0.10) -> tuple[str, dict]:
    """One script of `sessions` sessions, valid on the baseline (plus any other generated scripts).
    Returns (text, stats)."""
    rng = random.Random(f"editlog-workload:{seed}:{index}")
    ids = Ids(rng, seed, index)
    t = datetime(2026, 7, 1, 7, 0, tzinfo=timezone.utc) + timedelta(days=index * 10 + (seed % 97) * 0.01)
    lines: list[str] = []
    stats = {"sessions": 0, "finished": 0, "canceled": 0, "lines": 0, "attachments": 0, "relates": 0,
             "kinds": {"treeEdit": 0, "treeCreate": 0, "inspectionCreate": 0, "inspectionEdit": 0, "speciesEdit": 0}}
    created_trees: list[str] = []   # finished creates: may be edited later in this script
    attach_no = 0

    def emit(obj: dict) -> None:
        lines.append(json.dumps(obj, separators=(", ", ": "), ensure_ascii=False))

    def tick(lo=20, hi=240) -> str:
        nonlocal t
        t += timedelta(seconds=rng.randint(lo, hi))
        return iso(t)

    def dbh() -> float:
        lo, hi = fx.dbh_range
        return round(min(hi, max(lo, rng.lognormvariate(2.3, 0.7))), 1)

    def width() -> float:
        lo, hi = fx.width_range
        return round(rng.uniform(lo, min(hi, 15.0)) if rng.random() < 0.9 else rng.uniform(lo, hi), 1)

    def tree_value(field: str):
        if field == "PlantedBy":
            return rng.choice(PLANTERS)
        if field == "PlantedDate":
            d = datetime(2000, 1, 1, tzinfo=timezone.utc) + timedelta(days=rng.randint(0, 9500))
            return epoch_ms(d) if rng.random() < 0.5 else iso(d)
        if field == "SiteWidth":
            return width()
        if field == "SiteType":
            return rng.choice(fx.site_types)
        if field == "Wires":
            return rng.choice(fx.wires)
        if field == "Condition":
            return rng.choice(fx.conditions)
        if field == "DBH":
            return dbh()
        if field == "Address":
            return rng.choice(fx.addresses)["address"]
        raise KeyError(field)

    for k in range(sessions):
        actor, device = rng.choice(ACTORS)
        sid = f"wl-s{seed}-{index:03d}-{k:04d}"
        common = {"actor": actor, "device": device, "session": sid}
        r = rng.random()
        if r < 0.55:
            kind = "treeEdit"
        elif r < 0.75:
            kind = "inspectionCreate"
        elif r < 0.83:
            kind = "inspectionEdit"
        elif r < 0.93:
            kind = "treeCreate"
        else:
            kind = "speciesEdit"
        stats["kinds"][kind] += 1
        stats["sessions"] += 1
        t += timedelta(seconds=rng.randint(60, 900))
        can_attach = True
        if kind == "treeEdit":
            g = rng.choice(created_trees) if created_trees and rng.random() < 0.1 else rng.choice(fx.tree_ids)
            emit({"op": "edit", **common, "at": tick(), "layer": "Trees", "globalId": g})
            for f in rng.sample(TREE_FIELDS[:-1], rng.randint(1, 4)) + (["Address"] if rng.random() < 0.04 else []):
                emit({"op": "set", **common, "at": tick(), "field": f, "value": tree_value(f)})
            if rng.random() < 0.2:
                stats["relates"] += 1
                emit({"op": "relate", **common, "at": tick(), "relationship": "Species_Trees", "globalId": rng.choice(fx.species_ids)})
        elif kind == "treeCreate":
            g = ids.guid()
            x, y = fx.random_point(rng)
            attrs = {"Condition": rng.choice(fx.conditions), "DBH": round(rng.uniform(0.5, 3.0), 1),
                     "PlantedBy": rng.choice(PLANTERS), "SiteType": rng.choice(fx.site_types), "Wires": rng.choice(fx.wires)}
            if rng.random() < 0.5:
                attrs["SiteWidth"] = width()
            emit({"op": "create", **common, "at": tick(), "layer": "Trees", "globalId": g,
                  "geometry": {"x": x, "y": y, "spatialReference": {"wkid": 4326}}, "attributes": attrs})
            stats["relates"] += 1
            emit({"op": "relate", **common, "at": tick(), "relationship": "Species_Trees", "globalId": rng.choice(fx.species_ids)})
            if rng.random() < 0.5:
                emit({"op": "set", **common, "at": tick(), "field": "PlantedDate", "value": iso(t.replace(hour=0, minute=0, second=0))})
        elif kind == "inspectionCreate":
            tree = rng.choice(created_trees) if created_trees and rng.random() < 0.1 else rng.choice(fx.tree_ids)
            g = ids.guid()
            attrs = {"Condition": rng.choice(fx.conditions), "DBH": dbh(), "CollectedBy": actor.replace(".", " ").title(),
                     "CollectedDate": epoch_ms(t) if rng.random() < 0.5 else iso(t)}
            emit({"op": "create", **common, "at": tick(), "layer": "Inspections", "globalId": g,
                  "parent": {"relationship": "Tree_Inspections", "globalId": tree}, "attributes": attrs})
            if rng.random() < 0.4:
                emit({"op": "set", **common, "at": tick(), "field": "Notes", "value": rng.choice(NOTES)})
        elif kind == "inspectionEdit":
            g = rng.choice(fx.inspection_ids)
            emit({"op": "edit", **common, "at": tick(), "layer": "Inspections", "globalId": g})
            for f in rng.sample(["Condition", "DBH", "Notes"], rng.randint(1, 2)):
                v = {"Condition": lambda: rng.choice(fx.conditions), "DBH": dbh, "Notes": lambda: rng.choice(NOTES)}[f]()
                emit({"op": "set", **common, "at": tick(), "field": f, "value": v})
        else:  # speciesEdit: Species has no attachments
            can_attach = False
            g = rng.choice(fx.species_ids)
            emit({"op": "edit", **common, "at": tick(), "layer": "Species", "globalId": g})
            f = rng.choice(["FunctionalType", "Edible"])
            emit({"op": "set", **common, "at": tick(), "field": f,
                  "value": rng.choice(fx.functional_types if f == "FunctionalType" else fx.yes_no)})
        if can_attach and rng.random() < attach_rate:
            attach_no += 1
            stats["attachments"] += 1
            emit({"op": "attach", **common, "at": tick(), "attachmentId": ids.guid(),
                  "name": f"IMG_{index:03d}_{attach_no:04d}.jpg", "contentType": "image/jpeg",
                  "dataBase64": fake_jpeg(rng), "preferredSize": rng.choice(["small", "medium", "large", "actual"])})
        if rng.random() < cancel_rate:
            stats["canceled"] += 1
            emit({"op": "cancel", **common, "at": tick()})
        else:
            stats["finished"] += 1
            emit({"op": "finish", **common, "at": tick()})
            if kind == "treeCreate":
                created_trees.append(g)
    stats["lines"] = len(lines)
    return "\n".join(lines) + "\n", stats


def big_attachment_script(label: str, size: int, tree_gid: str, photo_gid: str) -> str:
    """One session creating a tree with one attachment of ``size`` random bytes (seeded by ``label``). Past the
    store's inline limit (4 MiB), its bytes are stored in chunks (``blob_chunks``), which the harnesses then cover."""
    data = random.Random(label).randbytes(size)
    lines = [
        {"op": "create", "layer": "Trees", "globalId": tree_gid, "session": "big",
         "geometry": {"x": -122.63, "y": 45.52}, "attributes": {"DBH": 3}},
        {"op": "attach", "attachmentId": photo_gid, "name": "scan.tif", "contentType": "image/tiff",
         "dataBase64": base64.b64encode(data).decode()},
        {"op": "finish"},
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def generate_baseline_trees(fx: Fixtures, seed: int, n: int) -> dict:
    """A Trees feature set of n features (baseline/Trees.json shape)."""
    rng = random.Random(f"editlog-baseline-trees:{seed}:{n}")
    ids = Ids(rng, seed, 0xFFFF)
    shape = {k: v for k, v in fx.trees_fs.items() if k != "features"}
    editors = ["portland_parks", "lfischer_pdx", "bwhitaker_pdx", "mgreene_pdx", "jnguyen_pdx"]
    feats = []
    for i in range(n):
        x, y = fx.random_point(rng)
        planted = datetime(1960, 1, 1, tzinfo=timezone.utc) + timedelta(days=rng.randint(0, 23000))
        created = datetime(2023, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=rng.randint(0, 525600))
        edited = created + timedelta(minutes=rng.randint(0, 400000))
        attrs = {
            "OBJECTID": i + 1,
            "GlobalID": ids.guid(),
            "SpeciesGlobalID": rng.choice(fx.species_ids),
            "Address": fx.nearest_address(x, y),
            "Neighborhood": fx.neighborhood(x, y),
            "PlantedBy": rng.choice(PLANTERS) if rng.random() < 0.8 else None,
            "PlantedDate": epoch_ms(planted) if rng.random() < 0.85 else None,
            "SiteWidth": round(rng.uniform(2.0, 15.0), 1),
            "SiteType": rng.choice(fx.site_types),
            "Wires": rng.choice(fx.wires),
            "Condition": rng.choices(fx.conditions, weights=[50, 30, 15, 5])[0],
            "DBH": round(min(fx.dbh_range[1], rng.lognormvariate(2.3, 0.7)), 1),
            "CreationDate": epoch_ms(created),
            "Creator": rng.choice(editors),
            "EditDate": epoch_ms(edited),
            "Editor": rng.choice(editors),
        }
        feats.append({"attributes": attrs, "geometry": {"x": x, "y": y}})
    return {**shape, "features": feats}


# ------------------------------------------------------------------------------------------
# Checking with the real CLI
# ------------------------------------------------------------------------------------------

def init_args(fx: Fixtures, db: str, trees: str | None = None) -> list[str]:
    b = fx.path / "baseline"
    return ["init", db, "--service", str(fx.path / "service.json"), "--webmap", str(fx.path / "webmap.json"),
            "--rules", str(fx.path / "rules.json"), "--data", str(b / "Species.json"), str(b / "Neighborhoods.json"),
            f"Trees={trees}" if trees else str(b / "Trees.json"), str(b / "Inspections.json")]


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def check_with_cli(editlog: str, fx: Fixtures, scripts: list[Path], trees: Path | None) -> int:
    tmp = tempfile.mkdtemp(prefix="gen-workload-check-")
    try:
        db = os.path.join(tmp, "check.db")
        t0 = time.monotonic()
        p = run([editlog] + init_args(fx, db, str(trees) if trees else None) + ["--json"])
        if p.returncode != 0:
            print(f"check: init failed (exit {p.returncode}): {p.stderr.strip()}", file=sys.stderr)
            return 1
        print(f"check: init {json.loads(p.stdout)['events']} events in {time.monotonic() - t0:.2f}s")
        total = 0
        for s in scripts:
            t0 = time.monotonic()
            p = run([editlog, "record", db, str(s), "--json"])
            if p.returncode != 0:
                print(f"check: {s.name} rejected (exit {p.returncode}): {p.stderr.strip()}", file=sys.stderr)
                return 1
            n = json.loads(p.stdout)["events"]
            total += n
            print(f"check: {s.name}: {n} events in {time.monotonic() - t0:.2f}s")
        p = run([editlog, "sessions", db, "--status", "open", "--json"])
        if p.returncode != 0 or json.loads(p.stdout):
            print(f"check: sessions left open: {p.stdout[:300]} {p.stderr.strip()}", file=sys.stderr)
            return 1
        t0 = time.monotonic()
        p = run([editlog, "verify", db, "--json"])
        if p.returncode != 0:
            print(f"check: verify failed (exit {p.returncode}): {p.stdout.strip()} {p.stderr.strip()}", file=sys.stderr)
            return 1
        print(f"check: verify ok ({json.loads(p.stdout)['events']} events) in {time.monotonic() - t0:.2f}s; {total} events recorded")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def default_editlog() -> str:
    rel = ROOT / ".build" / "release" / "editlog"
    dbg = ROOT / ".build" / "debug" / "editlog"
    return str(dbg if dbg.exists() or not rel.exists() else rel)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fixtures", default=str(DEFAULT_FIXTURES))
    ap.add_argument("--out", required=True, help="directory for scripts, or file for --baseline-trees")
    ap.add_argument("--scripts", type=int, default=1, help="number of scripts (default 1)")
    ap.add_argument("--first-index", type=int, default=0, help="index of the first script (ids contain it)")
    ap.add_argument("--sessions", type=int, default=200, help="sessions per script (default 200)")
    ap.add_argument("--attach-rate", type=float, default=0.15)
    ap.add_argument("--cancel-rate", type=float, default=0.10)
    ap.add_argument("--baseline-trees", type=int, metavar="N", help="write a Trees feature set of N features instead")
    ap.add_argument("--check", action="store_true", help="record / load the output with the real CLI and verify")
    ap.add_argument("--editlog", default=default_editlog())
    a = ap.parse_args(argv)
    fx = Fixtures(Path(a.fixtures))
    if a.baseline_trees is not None:
        fs = generate_baseline_trees(fx, a.seed, a.baseline_trees)
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(fs, separators=(",", ":")))
        print(f"wrote {out} ({a.baseline_trees} trees, {out.stat().st_size} bytes)")
        return check_with_cli(a.editlog, fx, [], out) if a.check else 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(a.first_index, a.first_index + a.scripts):
        text, st = generate_script(fx, a.seed, i, a.sessions, a.attach_rate, a.cancel_rate)
        p = out / f"wl-s{a.seed}-{i:03d}.ndjson"
        p.write_text(text)
        paths.append(p)
        print(f"wrote {p}: {st['lines']} lines, {st['sessions']} sessions ({st['finished']} finished, "
              f"{st['canceled']} canceled), {st['attachments']} attachments, kinds {st['kinds']}")
    return check_with_cli(a.editlog, fx, paths, None) if a.check else 0


if __name__ == "__main__":
    sys.exit(main())
