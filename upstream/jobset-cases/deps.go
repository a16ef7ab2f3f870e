//go:build tools

// The test-only imports of sigs.k8s.io/jobset/pkg/webhooks, so `go mod tidy` keeps their modules
// in go.mod and go.sum and `go test -mod=readonly` of that package resolves them.
package webhooks

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/stretchr/testify/assert"
	_ "github.com/stretchr/testify/require"
	_ "sigs.k8s.io/controller-runtime/pkg/client/fake"
	_ "sigs.k8s.io/jobset/pkg/webhooks"
)
