"""When the Pulumi-native providers and the Pulumi engine replace a resource, read from their Go source.

pulumi-kubernetes (``provider/pkg/provider/``, the module the live tier builds):

- ``diff.go`` ``forceNewProperties``: ``.metadata.name`` and ``.metadata.namespace`` always; a
  Secret's ``.type``, ``.stringData`` and ``.data`` unless the provider sets ``enableSecretMutable``
  (and the Secret is not ``immutable``); otherwise the ``forceNew`` table by group, version and kind
  (Deployment ``.spec.selector``, Job ``.spec.template``, Service ``.spec.clusterIP``, RoleBinding
  ``.roleRef``, ...); then a ConfigMap's ``.binaryData`` and ``.data`` unless ``enableConfigMapMutable``.
- ``provider.go`` ``Diff``: a ``<Kind>Patch`` resource replaces only on ``.metadata.name`` and
  ``.metadata.namespace``; a changed path at or below a listed one replaces
  (``openapi.PatchPropertiesChanged``, a JSONPath lookup in the patch); an object replaced under the
  same name and namespace is deleted first (``deleteBeforeReplace``); ``DiffConfig``: a provider is
  replaced when ``clusterIdentifier`` changes, when ``renderYamlToDirectory`` changes, and when the
  kubeconfig's active cluster changes (``kubeconfig``, ``context``, ``cluster``: both kubeconfigs must
  name one, or one of them be computed).
- ``provider_construct.go``: the component resources the provider constructs (``helm.sh/v4:Chart``).

The engine (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``): a component has no provider, so
a change of its inputs is an update, never a replacement (``diff``: ``prov == nil``); a resource whose
provider reference changes is replaced when the new provider's ``DiffConfig`` says so
(``providerChanged``); ``replaceOnChanges`` (``applyReplaceOnChanges``) and ``deleteBeforeReplace``
(the goal's option over the provider's choice) as a program sets them; a resource deleted before it is
replaced takes with it the dependents its loss would replace (``calculateDependentReplacements``).

pulumi-docker-build (``provider/internal/image.go``): ``Image.Diff`` reports every changed input as
``provider.Update`` and no replacement kind, so no input of an Image replaces it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .go_schema import Source, Token, key_value, matching, qualified, split_elements, tokenize
from .upstream_git import DerivationError

DIFF_FILE = "pkg/provider/diff.go"  # paths inside the Go module (pulumi-kubernetes: its provider/ folder)
PROVIDER_FILE = "pkg/provider/provider.go"
CONSTRUCT_FILE = "pkg/provider/provider_construct.go"
KUBERNETES_FILES = (DIFF_FILE, PROVIDER_FILE, CONSTRUCT_FILE)
STEP_GENERATOR_FILE = "resource/deploy/step_generator.go"
IMAGE_DIFF = "func (*Image) Diff("


def json_path(path: str) -> str:
    """``.spec.containers[*].args`` -> ``spec.containers.args`` (a plan path without list indexes)."""
    return ".".join(part.split("[", 1)[0] for part in path.strip(".").split("."))


def _strings(tokens: list[Token]) -> list[str]:
    return [t.text.strip('"') for t in tokens if t.kind == "str"]


class _Properties:
    """Evaluates the ``properties`` expressions of ``diff.go``."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def value(self, tokens: list[Token]) -> list[str]:
        if not tokens:
            return []
        name, after = qualified(tokens)
        if name == "properties" and after < len(tokens) and tokens[after].text == "{":
            return _strings(tokens[after + 1 : matching(tokens, after)])
        if name == "append" and after < len(tokens) and tokens[after].text == "(":
            out: list[str] = []
            for arg in split_elements(tokens[after + 1 : matching(tokens, after)]):
                spread = arg[-1].text == "..."
                out += self.value(arg[:-1] if spread else arg)
            return out
        if name and after < len(tokens) and tokens[after].text == "(":
            args = _strings(tokens[after + 1 : matching(tokens, after)])
            return self.call(name, args)
        if name in self.source.vars:
            return self.value(self.source.vars[name])
        raise DerivationError(f"diff.go: cannot read {' '.join(t.text for t in tokens[:6])}")

    def call(self, name: str, args: list[str]) -> list[str]:
        """``metadataForceNewProperties(".metadata")``: every ``prefix + ".x"`` of the body, for each
        argument (the helpers build ``properties{prefix + ...}`` from one prefix or loop over many)."""
        body = self.source.funcs.get(name)
        if body is None:
            raise DerivationError(f"diff.go: no function {name}")
        suffixes = [
            body[i + 2].text.strip('"')
            for i in range(len(body) - 2)
            if body[i].kind == "ident" and body[i + 1].text == "+" and body[i + 2].kind == "str"
        ]
        if not suffixes:
            raise DerivationError(f"diff.go: {name} builds no prefix + suffix paths")
        return [arg + suffix for arg in args for suffix in suffixes]

    def table(self, tokens: list[Token]) -> dict[str, dict[str, dict[str, list[str]]]]:
        """``_groups{"apps": _versions{"v1": _kinds{"Deployment": deployment}}, "core": core}``."""
        return {
            group: {
                version: {kind: self.value(props) for kind, props in self._entries(kinds_tokens)}
                for version, kinds_tokens in self._entries(versions_tokens)
            }
            for group, versions_tokens in self._entries(tokens)
        }

    def _entries(self, tokens: list[Token]) -> list[tuple[str, list[Token]]]:
        """The ``"key": value`` entries of a composite literal (a variable name stands for its value)."""
        name, after = qualified(tokens)
        if after < len(tokens) and tokens[after].text == "{":
            body = tokens[after + 1 : matching(tokens, after)]
        elif name in self.source.vars:
            return self._entries(self.source.vars[name])
        else:
            raise DerivationError(f"diff.go: expected a composite literal, got {name}")
        out = []
        for element in split_elements(body):
            key, value = key_value(element)
            if key is None or key[0].kind != "str":
                raise DerivationError("diff.go: a table entry without a string key")
            out.append((key[0].text.strip('"'), value))
        return out


def _function(text: str, signature: str) -> str:
    """The text of the Go function whose declaration line starts with ``signature``."""
    start = text.find(signature)
    if start < 0:
        raise DerivationError(f"no {signature!r}")
    end = text.find("\n}\n", start)
    return text[start : end + 2]


def _literal_after(text: str, marker: str, opener: str) -> list[str]:
    """The strings of the first ``opener{...}`` literal after ``marker`` in ``text``."""
    at = text.find(marker)
    if at < 0:
        raise DerivationError(f"no {marker!r}")
    start = text.find(opener + "{", at)
    end = text.find("}", start)
    return re.findall(r'"([^"]*)"', text[start:end])


def kubernetes(texts: Mapping[str, str]) -> dict[str, Any]:
    """The replacement rules of pulumi-kubernetes from ``diff.go``, ``provider.go`` and
    ``provider_construct.go`` (paths relative to the provider module)."""
    diff = texts[DIFF_FILE]
    props = _Properties(Source([diff]))
    table = props.table(props.source.vars["forceNew"])
    kinds: dict[str, list[str]] = {}
    for group, versions in table.items():
        for version, by_kind in versions.items():
            for kind, paths in by_kind.items():
                token = f"{group or 'core'}/{version}:{kind}"
                kinds[token] = sorted({json_path(p) for p in paths})
    body = _function(diff, "func (k *kubeProvider) forceNewProperties(")
    secret = _literal_after(body, "clients.IsSecret(obj)", "properties")
    config_map = _literal_after(body, "clients.IsConfigMap(obj)", "properties")
    metadata = re.search(r"props := (metadataForceNewProperties\([^)]*\))", body)
    if metadata is None:
        raise DerivationError("forceNewProperties no longer starts from metadataForceNewProperties")
    always = props.value(tokenize(metadata.group(1)))
    for flag in ("k.enableSecretMutable", "k.enableConfigMapMutable", "clients.IsImmutable(obj)"):
        if flag not in body:
            raise DerivationError(f"forceNewProperties no longer reads {flag}")
    provider = texts[PROVIDER_FILE]
    diff_fn = _function(provider, "func (k *kubeProvider) Diff(")
    patch = _literal_after(diff_fn, "forceNewFields :=", "[]string")
    if "kinds.IsPatchResource" not in diff_fn:
        raise DerivationError("Diff no longer treats Patch resources apart")
    config = _function(provider, "func (k *kubeProvider) DiffConfig(")
    identifier = re.search(r'clusterIdentifierKey\s*=\s*"([^"]+)"', provider)
    active = _literal_after(config, "getActiveClusterFromConfig(newConfig, news)", "[]string")
    if identifier is None or "diff.Updated(clusterIdentifierKey)" not in config:
        raise DerivationError("DiffConfig no longer replaces on clusterIdentifier")
    render_dir = re.search(r'case "(renderYamlToDirectory)":\s*\n[^\n]*\n\s*replaces = append', config)
    if render_dir is None:
        raise DerivationError("DiffConfig no longer replaces on renderYamlToDirectory")
    components = re.findall(r'"(kubernetes:[^"]+)":\s*provider\w*\.New\w+Provider', texts[CONSTRUCT_FILE])
    _require(
        config,
        "DiffConfig",
        "news[key].IsComputed()",
        "oldFound && found && !reflect.DeepEqual(oldActiveCluster, activeCluster)",
        "diff.Same(clusterIdentifierKey) && news.HasValue(clusterIdentifierKey)",
    )
    _require(
        diff_fn,
        "Diff",
        "metadata.IsNamed(newInputs, newResInputs)",
        "!metadata.IsAutonamed(newInputs)",
        "newInputs.GetName() == oldLive.GetName()",
        "newInputs.GetNamespace() == oldLive.GetNamespace()",
    )
    return {
        "always": sorted(json_path(p) for p in always),
        "secret": {"fields": sorted(json_path(p) for p in secret), "mutableWith": "enableSecretMutable"},
        "configMap": {
            "fields": sorted(json_path(p) for p in config_map),
            "mutableWith": "enableConfigMapMutable",
        },
        "patchResources": sorted(json_path(p) for p in patch),
        "kinds": dict(sorted(kinds.items())),
        "components": sorted(components),
        "deleteBeforeReplace": "pulumi-kubernetes deletes first when it replaces an object that keeps its "
        "name and namespace (provider.go Diff: named, not autonamed, same name, same namespace)",
        "provider": {
            "activeCluster": sorted(active),
            "activeClusterRule": "DiffConfig replaces on kubeconfig, context or cluster only when the old "
            "and the new kubeconfig both name an active cluster (getActiveClusterFromConfig) and the two "
            "differ; a computed one always replaces",
            "clusterIdentifierRule": "DiffConfig replaces when clusterIdentifier changes (not when it is "
            "added or removed), and replaces nothing while it is set and unchanged",
            "replacedBy": sorted({identifier.group(1), render_dir.group(1), *active}),
            "why": {
                identifier.group(1): "DiffConfig replaces the provider when the cluster identifier changes",
                render_dir.group(1): "DiffConfig replaces the provider when the render directory changes",
                **{
                    key: "DiffConfig replaces the provider when the kubeconfig's active cluster changes"
                    for key in active
                },
            },
        },
    }


def _require(body: str, name: str, *snippets: str) -> None:
    for snippet in snippets:
        if snippet not in body:
            raise DerivationError(f"{name} no longer has {snippet!r}: read it again")


def engine(text: str) -> dict[str, Any]:
    """What the engine's step generator does with components, a changed provider reference, the
    ``replaceOnChanges`` and ``deleteBeforeReplace`` options, and the dependents of a resource
    deleted before it is replaced."""
    diff_fn = _function(text, "func (sg *stepGenerator) diff(")
    if (
        "if prov == nil {" not in diff_fn
        or "plugin.DiffResult{Changes: plugin.DiffSome}, nil, nil" not in diff_fn
    ):
        raise DerivationError("step_generator.go diff no longer reports a component's change as a plain diff")
    changed = _function(text, "func (sg *stepGenerator) providerChanged(")
    if "newProv.DiffConfig(" not in changed or "if diff.Replace() {" not in changed:
        raise DerivationError("providerChanged no longer asks the new provider's DiffConfig")
    _require(
        text,
        "step_generator.go",
        "if goal.DeleteBeforeReplace != nil {",
        "toReplace, err = sg.calculateDependentReplacements(old)",
    )
    dependents = _function(text, "func (sg *stepGenerator) calculateDependentReplacements(")
    _require(
        dependents,
        "calculateDependentReplacements",
        "for _, propertyDep := range r.PropertyDependencies[pk] {",
        'pv = resource.MakeComputed(resource.NewProperty("<unknown>"))',
        "if replaceSet[ref.URN()] {",
        "diff, err = applyReplaceOnChanges(diff, r.ReplaceOnChanges, false)",
    )
    on_changes = _function(text, "func applyReplaceOnChanges(")
    _require(on_changes, "applyReplaceOnChanges", "replaceOnChangePath.Contains(diffPath)")
    return {
        "component": "a component has no provider: a change of its inputs is an update, never a replacement "
        "(step_generator.go diff, prov == nil)",
        "providerChange": "a resource whose provider is replaced is replaced too (step_generator.go "
        "providerChanged: the new provider's DiffConfig reports a replacement)",
        "deleteBeforeReplace": "the deleteBeforeReplace option, when set, overrides the provider's choice "
        "(step_generator.go: goal.DeleteBeforeReplace)",
        "replaceOnChanges": "a change at or below a replaceOnChanges path replaces the resource "
        "(step_generator.go applyReplaceOnChanges)",
        "dependents": "a resource deleted before it is replaced takes with it each dependent whose provider "
        "asks for a replacement once the inputs taken from the replaced resources are unknown, or whose "
        "provider is replaced (step_generator.go calculateDependentReplacements)",
    }


def docker_build_image(text: str) -> dict[str, Any]:
    """The Image's replacement rule from ``image.go`` (or the text of its ``Diff`` alone), with the
    sha256 of that function's text."""
    start = text.find(IMAGE_DIFF)
    if start < 0:
        raise DerivationError(f"no {IMAGE_DIFF}")
    comment = text.rfind("\n\n", 0, start)
    body = text[comment + 2 if comment >= 0 else 0 : text.find("\n}\n", start) + 3]
    kinds = set(re.findall(r"provider\.(\w*(?:Add|Update|Delete)\w*)\b", body))
    assigned = set(re.findall(r"diff\[[^\]]+\]\s*=\s*(\w+)", body))
    if kinds != {"Update"} or assigned != {"update"} or "DeleteBeforeReplace" in body:
        raise DerivationError(f"Image.Diff reports {sorted(kinds)} through {sorted(assigned)}: read it again")
    return {
        "replaces": [],
        "why": "Image.Diff reports every changed input as provider.Update and no replacement kind",
        "diffSha256": hashlib.sha256(body.encode()).hexdigest(),
    }


def read(root: Path, paths: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """The texts of ``paths`` under a module folder, and their sha256."""
    texts = {path: (root / path).read_text() for path in paths}
    return texts, {path: hashlib.sha256(text.encode()).hexdigest() for path, text in texts.items()}
