"""A chart folder given in place of the upstream registry must hold the version the platform pins.

Helm reads a local folder as it is and ignores the requested version (helm v3.18.6
``pkg/action/install.go`` ``ChartPathOptions.LocateChart``: a path that exists is returned without a
version check; pulumi-kubernetes v4.25.0's ``helm.sh/v4:Chart`` locates charts through it,
``provider/pkg/helm/tool.go``), so a stale mirror would install silently; this check reads the
folder's ``Chart.yaml`` first and names the key to fix.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def local_chart_problem(source: str, key: str, name: str, version: str) -> str | None:
    """Why ``source`` (a folder, not ``oci://``) cannot serve chart ``name`` ``version``, or None."""
    if source.startswith("oci://"):
        return None
    chart_file = Path(source) / "Chart.yaml"
    try:
        meta = yaml.safe_load(chart_file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        return f"{key}: {source} is not a chart folder ({err}); unpack the {name} {version} chart there"
    if not isinstance(meta, dict) or meta.get("name") != name:
        got = meta.get("name") if isinstance(meta, dict) else None
        return f"{key}: {chart_file} is chart {got!r}, not {name!r}; point it at the {name} chart"
    if str(meta.get("version")) != version:
        return (
            f"{key}: {chart_file} is {name} {meta.get('version')}, the platform pins {version}; "
            f"unpack the {name} {version} chart there"
        )
    return None
