// The Kubernetes provider plugin (pulumi-resource-kubernetes) of the pinned provider module.
//
// Upstream's main (provider/cmd/pulumi-resource-kubernetes) embeds schema files that its
// `go generate` step writes from the module's schema.json with the release version set; the Go
// module proxy serves the module without them. upstream/build.py writes the same two files here
// from the downloaded module before the build, and this main serves them as upstream's does.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
