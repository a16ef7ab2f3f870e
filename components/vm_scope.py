"""``HotswapVmScope``: the Resource Manager tag that marks a cluster's TPU VMs for the hotswap controller.

A tag key of its own per cluster (``GCE_FIREWALL`` purpose, under the project of the cluster's
network), its one value, and the grants GKE's service agents need to attach the value to the VMs
of the node pools that carry it. The TPU slice pools carry it (``node_pool_tags``); the controller's
role for calls on one VM is bound under :func:`tpu_platform.hotswap.iam.vm_scope_condition` of it.
``tpu_platform.hotswap.iam`` cites each piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from tpu_platform.hotswap import iam


@dataclass(frozen=True)
class HotswapVmScopeArgs:
    """The cluster whose TPU VMs the tag marks, its project and its network."""

    project: str
    cluster_name: str
    network: pulumi.Input[str]
    """``cluster.network`` of the stack, or the ``projects/P/global/networks/N`` GKE reports."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


def _network(project: str, network: pulumi.Input[str]) -> pulumi.Output[iam.Network]:
    return pulumi.Output.from_input(network).apply(lambda text: iam.cluster_network(project, text))


class HotswapVmScope(pulumi.ComponentResource):
    """Tag key, tag value, and the service agents' grants on the value."""

    tag_key_id: pulumi.Output[str]
    tag_value_id: pulumi.Output[str]
    ready: list[pulumi.Resource]

    def __init__(
        self, name: str, args: HotswapVmScopeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("tpu-platform:hotswap:VmScope", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        network = _network(args.project, args.network)
        key = gcp.tags.TagKey(
            f"{name}-key",
            parent=network.apply(lambda net: f"projects/{net.project}"),
            short_name=iam.tag_key_short_name(args.cluster_name),
            description=f"TPU VMs of GKE cluster {args.cluster_name}: the hotswap controller may read "
            "and reset only these",
            purpose=iam.TAG_PURPOSE,
            purpose_data=network.apply(lambda net: {"network": net.purpose_data}),
            opts=child,
        )
        value = gcp.tags.TagValue(
            f"{name}-value",
            parent=key.id,
            short_name=iam.TAG_VALUE_SHORT_NAME,
            description=f"The VMs of the TPU node pools of {args.cluster_name}",
            opts=child,
        )
        self.tag_key_id = key.id
        self.tag_value_id = value.id
        self.ready = self._service_agent_grants(name, args.project, value)
        self.register_outputs({"tagKey": self.tag_key_id, "tagValue": self.tag_value_id})

    @property
    def node_pool_tags(self) -> pulumi.Output[dict[str, str]]:
        """``node_config.resource_manager_tags`` of a node pool: ``{tagKeys/N: tagValues/M}`` (pulumi-gcp
        10.2.0 ``NodePoolNodeConfigArgs.resource_manager_tags``: "Keys must be in the format
        tagKeys/{tag_key_id}, and values are in the format tagValues/456")."""
        return pulumi.Output.all(self.tag_key_id, self.tag_value_id).apply(lambda ids: {ids[0]: ids[1]})

    @property
    def condition(self) -> pulumi.Output[iam.Condition]:
        """The IAM condition that holds only for the VMs carrying the tag."""
        return pulumi.Output.all(self.tag_key_id, self.tag_value_id).apply(
            lambda ids: iam.vm_scope_condition(ids[0], ids[1])
        )

    def _service_agent_grants(
        self, name: str, project: str, value: gcp.tags.TagValue
    ) -> list[pulumi.Resource]:
        """The tag-value grants of :data:`iam.TAG_GRANTS` for the service agents of the cluster's
        project, which are named by its number."""
        number = gcp.organizations.get_project_output(
            project_id=project, opts=pulumi.InvokeOutputOptions(parent=self)
        ).number
        return [
            gcp.tags.TagValueIamMember(
                f"{name}-{grant.name}",
                tag_value=value.id,
                role=grant.role,
                member=_member_of(grant, number),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for grant in iam.TAG_GRANTS
        ]


def _member_of(grant: iam.TagGrant, project_number: pulumi.Output[str]) -> pulumi.Output[str]:
    return project_number.apply(lambda number: grant.member(str(number)))
