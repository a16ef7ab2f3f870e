"""The Google provider's own validation, derived from its pinned source, over every rendered plan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tpu_platform.plan.provider_rules import (
    CLUSTER,
    NODE_POOL,
    helper_facts,
    load,
    schema_facts,
    violations,
)

PLANS = sorted(Path(__file__).resolve().parents[2].joinpath("plans").glob("*.yaml"))
SOURCE = """func resourceContainerNodePool() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"upgrade_settings": {
				Type:     schema.TypeList,
				Elem: &schema.Resource{
					Schema: map[string]*schema.Schema{
						"strategy": {
							Type:         schema.TypeString,
							Optional:     true,
							Default:      "SURGE",
							ValidateFunc: validation.StringInSlice([]string{"SURGE", "BLUE_GREEN"}, false),
						},
						"max_surge": {
							Type:          schema.TypeInt,
							ConflictsWith: []string{
								"upgrade_settings.0.blue_green_settings",
							},
						},
					},
				},
			},
			"node_config": schemaNodeConfig(),
		},
	}
}
"""
HELPER = """func schemaNodeConfig() *schema.Schema {
	return &schema.Schema{
		Type: schema.TypeList,
		Elem: &schema.Resource{
			Schema: map[string]*schema.Schema{
				"mode": {
					ValidateFunc: validation.StringInSlice([]string{"a", "b"}, true),
				},
			},
		},
	}
}
"""


def test_enums_and_conflicts_are_read_with_their_nesting_and_helpers() -> None:
    facts = schema_facts(SOURCE, helper_facts(HELPER))
    assert facts["upgrade_settings.strategy"] == {"enum": ["SURGE", "BLUE_GREEN"], "ignore_case": False}
    assert facts["upgrade_settings.max_surge"] == {"conflicts": ["upgrade_settings.0.blue_green_settings"]}
    assert facts["node_config.mode"] == {"enum": ["a", "b"], "ignore_case": True}


def test_the_committed_derivation_names_its_sources_and_the_gke_fields_the_components_set() -> None:
    data = load()
    assert data["tag"] == "v7.44.0" and data["repository"] == "hashicorp/terraform-provider-google"
    assert all(len(sha) == 64 for sha in data["files"].values())
    pool = data["resources"][NODE_POOL]
    assert pool["upgradeSettings.strategy"]["enum"] == ["SURGE", "BLUE_GREEN"]
    assert "nodeConfig.reservationAffinity.consumeReservationType" in pool
    assert data["resources"][CLUSTER], "cluster rules derived"


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.stem)
def test_no_committed_plan_holds_a_value_the_provider_rejects(plan: Path) -> None:
    assert violations(yaml.safe_load(plan.read_text())["resources"]) == []


def test_a_value_outside_the_enum_and_two_conflicting_fields_are_named() -> None:
    rules = {
        "tag": "vX",
        "resources": {
            NODE_POOL: {
                "upgradeSettings.strategy": {"enum": ["SURGE", "BLUE_GREEN"], "ignore_case": False},
                "upgradeSettings.maxSurge": {"conflicts": ["upgrade_settings.0.blue_green_settings"]},
            }
        },
    }
    bad = {
        "type": NODE_POOL,
        "name": "pool-0",
        "inputs": {"upgradeSettings": {"strategy": "SHORT_LIVED", "maxSurge": 0, "blueGreenSettings": {}}},
    }
    found = violations([bad], rules)
    assert len(found) == 2
    assert found[0].startswith("pool-0: upgradeSettings.maxSurge and upgradeSettings.blueGreenSettings")
    assert "'SHORT_LIVED' is not one of SURGE, BLUE_GREEN" in found[1]
    fine = {
        "type": NODE_POOL,
        "name": "p",
        "inputs": {"upgradeSettings": {"strategy": "SURGE", "maxSurge": 0}},
    }
    assert violations([fine], rules) == []


def test_the_rules_come_from_the_same_provider_sources_as_force_new() -> None:
    """Both derivations read the same three files at the same tag (the sha256 pins each)."""
    from tpu_platform.plan.force_new import load as force_new

    assert load()["files"] == force_new()["gke"]["files"]
    assert load()["tag"] == force_new()["gke"]["tag"]


def test_plan_refuses_to_write_a_plan_the_provider_would_reject(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpu_platform.commands import plan as command
    from tpu_platform.config import StackConfigError

    monkeypatch.setattr(command, "violations", lambda resources: ["pool-0: upgradeSettings.strategy = 'X'"])
    with pytest.raises(StackConfigError) as err:
        command.render_plan("seed")
    assert err.value.problems == ["the Google provider would reject pool-0: upgradeSettings.strategy = 'X'"]


def test_a_list_field_the_bridge_names_in_the_plural_is_still_checked() -> None:
    """``event_type`` (a Terraform list) is ``eventTypes`` in the plan; a wrong item is still named."""
    cluster = {
        "type": CLUSTER,
        "name": "cluster",
        "inputs": {"notificationConfig": {"pubsub": {"filter": {"eventTypes": ["UPGRADE_EVENT", "REBOOT"]}}}},
    }
    found = violations([cluster])
    assert len(found) == 1 and "'REBOOT' is not one of UPGRADE_AVAILABLE_EVENT" in found[0]


VAR_BLOCK = """var (
	cidrBlockConfig = &schema.Resource{
		Schema: map[string]*schema.Schema{
			"display_name": {
				Type:        schema.TypeString,
				Description: `Field for users
to identify CIDR blocks.`,
			},
		},
	}
)

func resourceContainerCluster() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"node_config_defaults": {
				Elem: &schema.Resource{
					Schema: map[string]*schema.Schema{
						"logging_variant": {
							ValidateFunc: validation.StringInSlice([]string{"DEFAULT"}, false),
						},
					},
				},
			},
		},
	}
}
"""


def test_a_package_level_schema_map_does_not_nest_the_fields_after_it() -> None:
    """The derivation once filed ``nodeConfigDefaults.loggingVariant`` under ``displayName``."""
    assert set(schema_facts(VAR_BLOCK)) == {"node_config_defaults.logging_variant"}
    assert "nodeConfigDefaults.loggingVariant" in load()["resources"][CLUSTER]


ONE_OF_SOURCE = """var (
	addonsConfigKeys = []string{
		"addons_config.0.http_load_balancing",
		"addons_config.0.dns_cache_config",
	}
)

func resourceContainerCluster() *schema.Resource {
	return &schema.Resource{
		Schema: map[string]*schema.Schema{
			"addons_config": {
				Elem: &schema.Resource{
					Schema: map[string]*schema.Schema{
						"http_load_balancing": {
							AtLeastOneOf: addonsConfigKeys,
						},
						"dns_cache_config": {
							AtLeastOneOf: addonsConfigKeys,
						},
					},
				},
			},
			"maintenance_policy": {
				Elem: &schema.Resource{
					Schema: map[string]*schema.Schema{
						"daily_maintenance_window": {
							ExactlyOneOf: []string{
								"maintenance_policy.0.daily_maintenance_window",
								"maintenance_policy.0.recurring_window",
							},
						},
					},
				},
			},
		},
	}
}
"""


def test_one_of_groups_are_read_through_package_level_key_lists_and_checked_on_present_blocks() -> None:
    facts = schema_facts(ONE_OF_SOURCE)
    assert facts["addons_config.http_load_balancing"]["at_least_one_of"] == [
        "addons_config.0.http_load_balancing",
        "addons_config.0.dns_cache_config",
    ]
    rules = {
        "tag": "vX",
        "resources": {
            CLUSTER: {
                "addonsConfig.httpLoadBalancing": facts["addons_config.http_load_balancing"],
                "maintenancePolicy.dailyMaintenanceWindow": facts[
                    "maintenance_policy.daily_maintenance_window"
                ],
            }
        },
    }
    empty_block = {"type": CLUSTER, "name": "c", "inputs": {"addonsConfig": {}}}
    assert violations([empty_block], rules) == [
        "c: at least one of addonsConfig.dnsCacheConfig, addonsConfig.httpLoadBalancing must be set, 0 are "
        "(terraform-provider-google vX AtLeastOneOf)"
    ]
    assert violations([{"type": CLUSTER, "name": "c", "inputs": {}}], rules) == [], "no block, no check"
    both = {
        "maintenancePolicy": {"dailyMaintenanceWindow": {"startTime": "03:00"}, "recurringWindow": {"x": 1}}
    }
    (line,) = violations([{"type": CLUSTER, "name": "c", "inputs": both}], rules)
    assert (
        "exactly one of maintenancePolicy.dailyMaintenanceWindow, maintenancePolicy.recurringWindow" in line
    )
    assert "2 are" in line
