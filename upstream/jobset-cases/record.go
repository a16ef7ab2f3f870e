// Package webhooks here is not a package of ours to import: record.go is compiled into the test
// binary of sigs.k8s.io/jobset/pkg/webhooks through `go test -overlay` (see
// tests/live/cluster/webhook_cases.py), next to a copy of upstream's jobset_webhook_test.go whose
// table loops call recordJobSetCase. It lives here as a Go file so vet, gofmt and go mod tidy see it.
package webhooks

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"

	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// recordEnv names the file the cases are appended to, one JSON object a line.
const recordEnv = "TPU_PLATFORM_JOBSET_CASES_OUT"

// jobSetCase is one row of an upstream table, as the transformed loop hands it over.
type jobSetCase struct {
	Op       string           // CREATE, UPDATE or DEFAULT
	Name     string           // the row's name
	Object   *jobset.JobSet   // js
	Old      *jobset.JobSet   // oldJs (updates)
	Want     error            // want (validation); nil means the webhook must accept
	Defaults *jobset.JobSet   // want (defaulting): the object after the defaulter
	Gates    map[string]bool  // feature gates the row sets during its sub-test
	Existing []runtime.Object // existingObjs: what the row pre-populates the fake client with
}

type record struct {
	Name            string            `json:"name"`
	Operation       string            `json:"operation"`
	Object          json.RawMessage   `json:"object"`
	OldObject       json.RawMessage   `json:"old_object"`
	ExpectedObject  json.RawMessage   `json:"expected_object"`
	ExpectRejected  bool              `json:"expect_rejected"`
	ExpectedErrors  []string          `json:"expected_errors"`
	FeatureGates    map[string]bool   `json:"feature_gates"`
	NonDefaultGates map[string]bool   `json:"non_default_gates"`
	ExistingObjects []json.RawMessage `json:"existing_objects"`
}

var recordMu sync.Mutex

// recordJobSetCase appends c to the file $TPU_PLATFORM_JOBSET_CASES_OUT; without it, it does nothing.
func recordJobSetCase(t *testing.T, c jobSetCase) {
	t.Helper()
	path := os.Getenv(recordEnv)
	if path == "" {
		return
	}
	r := record{
		Name: c.Name, Operation: c.Op, Object: jobSetJSON(t, c.Object), OldObject: jobSetJSON(t, c.Old),
		ExpectedObject: jobSetJSON(t, c.Defaults), ExpectRejected: c.Want != nil,
		ExpectedErrors: flattenErrors(c.Want), FeatureGates: c.Gates, NonDefaultGates: map[string]bool{},
		ExistingObjects: []json.RawMessage{},
	}
	if r.FeatureGates == nil {
		r.FeatureGates = map[string]bool{}
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for name, value := range r.FeatureGates {
		spec, ok := known[featuregate.Feature(name)]
		if !ok {
			t.Fatalf("record %q: feature gate %s is not registered", c.Name, name)
		}
		if value != spec.Default {
			r.NonDefaultGates[name] = value
		}
	}
	for _, obj := range c.Existing {
		r.ExistingObjects = append(r.ExistingObjects, objectJSON(t, obj))
	}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("record %q: %v", c.Name, err)
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("record %q: %v", c.Name, err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatalf("record %q: %v", c.Name, err)
	}
}

// jobSetJSON is js as the API server would see it: encoding/json of the real type, with its TypeMeta.
func jobSetJSON(t *testing.T, js *jobset.JobSet) json.RawMessage {
	if js == nil {
		return json.RawMessage("null")
	}
	c := js.DeepCopy()
	c.APIVersion = jobset.GroupVersion.String()
	c.Kind = "JobSet"
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal JobSet %q: %v", js.Name, err)
	}
	return data
}

// objectJSON serialises a built-in object, its apiVersion and kind taken from client-go's scheme.
func objectJSON(t *testing.T, obj runtime.Object) json.RawMessage {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		t.Fatalf("kind of %T: %v", obj, err)
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(gvks[0])
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal %T: %v", obj, err)
	}
	return data
}

// flattenErrors lists the messages in an errors.Join or a field.ErrorList aggregate, one each.
func flattenErrors(err error) []string {
	out := []string{}
	if err == nil {
		return out
	}
	if agg, ok := err.(utilerrors.Aggregate); ok {
		for _, e := range agg.Errors() {
			out = append(out, flattenErrors(e)...)
		}
		return out
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, flattenErrors(e)...)
		}
		return out
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("%T with an empty message", err))
	}
	return out
}
