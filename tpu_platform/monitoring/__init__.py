"""What the platform is doing, as code: metric collection, alert rules and the dashboard (pure).

``scrape`` renders what Managed Prometheus needs to collect Kueue's and JobSet's metrics,
``alerts`` the alert rules (GMP ``Rules``, Prometheus rule files, Cloud Monitoring conditions),
``dashboard`` the Cloud Monitoring dashboard; ``metrics`` names every series they read.
"""

from .alerts import AlertRule, alert_rules, rule_file, rules_objects

__all__ = ["AlertRule", "alert_rules", "rule_file", "rules_objects"]
