"""Checks of the ``monitoring`` section: rules only over metrics the stack collects, channels that
Cloud Monitoring accepts."""

from __future__ import annotations

import re

from ..platform import PlatformConfig
from ..problems import Problems

EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
TOPIC_RE = re.compile(r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$")


def check_monitoring(cfg: PlatformConfig) -> Problems:
    """Alert rules need the metrics they read; channel addresses match their type; names are unique."""
    problems = Problems()
    mon = cfg.monitoring
    if mon.alert_rules and cfg.managed_prometheus and cfg.hotswap.enabled and not cfg.hotswap.pod_monitoring:
        problems.add(
            ("monitoring", "alertRules"),
            "the controller's alerts read its hotswap_* metrics, which only hotswap.podMonitoring: true "
            "collects; turn it on or set alertRules: false",
        )
    if mon.notification_channels and not mon.alert_rules:
        problems.add(
            ("monitoring", "notificationChannels"),
            "channels are paged by the alert policies, which come from the alert rules; set alertRules: true",
        )
    seen: set[str] = set()
    for i, channel in enumerate(mon.notification_channels):
        at = ("monitoring", "notificationChannels", i)
        if channel.name in seen:
            problems.add((*at, "name"), f"{channel.name!r} is listed twice; channel names must be unique")
        seen.add(channel.name)
        valid = {
            "email": (EMAIL_RE, "an email address"),
            "pubsub": (TOPIC_RE, "a topic 'projects/PROJECT/topics/TOPIC'"),
            "webhook": (re.compile(r"^https://[^\s]+$"), "an https:// URL"),
        }[channel.type]
        if not valid[0].match(channel.address):
            problems.add((*at, "address"), f"{channel.address!r} is not {valid[1]} (type {channel.type})")
    return problems
