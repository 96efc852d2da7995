"""What the command line prints for a person: aligned tables, a partition's status row with its
service levels, and where a read came from while a writer holds the warehouse."""

from typing import Any

from replay_assets.core.slo import PartitionSlo, Slos


def print_reading(reading: dict[str, Any]) -> None:
    doing = reading["in_progress"]
    if doing:
        print(f"in progress: {doing['use_case']} {doing['partition']} since {doing['since']}")
    if reading["source"].startswith("empty"):
        print(f"the warehouse is busy: showing the {reading['source']}")
    elif reading["source"] != "warehouse":
        print(f"the warehouse is busy: showing the {reading['source']} as of its last refresh")


def print_retention(retention: dict[str, Any]) -> None:
    if retention["pruned_through"]:
        print(
            f"retention: the newest {retention['retention_load_dates']} applied load dates keep their raw "
            f"input; load dates up to {retention['pruned_through']} are pruned (behind the horizon)"
        )


def status_row(p: dict[str, object], slos: Slos) -> dict[str, object]:
    return {
        "asset": p["asset"],
        "partition": p["partition_key"],
        "status": p["status"],
        "last good": f"v{p['last_good_version']} {str(p['last_good_sha256'])[:12]}"
        if p["last_good_version"]
        else "-",
        "SLO fresh/compl/dur/avail": slo_cell(slos.get((str(p["asset"]), str(p["partition_key"])))),
        "reason": p["reason"] or "",
    }


def slo_cell(found: PartitionSlo | None) -> str:
    if found is None:
        return "-"
    slo = found.slo
    duration = "-" if slo.duration_minutes is None else f"{slo.duration_minutes:g}"
    figures = (
        f"{slo.freshness_minutes:g}/{slo.completeness_pct:g}%/{duration}/{slo.availability_minutes:g} min"
    )
    return f"{figures} {'met' if slo.all_met else 'MISSED'}"


def print_table(rows: list[dict[str, object]]) -> None:
    if not rows:
        print("(nothing yet)")
        return
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in rows[0]}
    print("  ".join(c.ljust(w) for c, w in widths.items()))
    for r in rows:
        print("  ".join(str(r[c]).ljust(w) for c, w in widths.items()))
