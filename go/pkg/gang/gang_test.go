package gang

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"schedgate/pkg/mutant"
)

func pod(labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels}}
}

func TestGroupReadsNameAndMinimumFromLabels(t *testing.T) {
	for _, tc := range []struct {
		labels  map[string]string
		name    string
		min     int
		ok, bad bool
	}{
		{nil, "", 0, false, false},
		{map[string]string{GroupLabel: "g", MinLabel: "4"}, "g", 4, true, false},
		{map[string]string{GroupLabel: "g"}, "g", 0, true, true},
		{map[string]string{GroupLabel: "g", MinLabel: "0"}, "g", 0, true, true},
		{map[string]string{GroupLabel: "g", MinLabel: "four"}, "g", 0, true, true},
	} {
		name, min, ok, err := group(pod(tc.labels))
		if name != tc.name || min != tc.min || ok != tc.ok || (err != nil) != tc.bad {
			t.Errorf("group(%v) = %q, %d, %v, %v; want %q, %d, %v, error %v", tc.labels, name, min, ok, err,
				tc.name, tc.min, tc.ok, tc.bad)
		}
		if err != nil && !strings.Contains(err.Error(), MinLabel) {
			t.Errorf("group(%v): error %q does not name %s", tc.labels, err, MinLabel)
		}
	}
}

func TestNewRefusesABadTimeoutAndAnUnknownMutant(t *testing.T) {
	for _, raw := range []string{`{"permitTimeoutSeconds": 0}`, `{"permitTimeoutSeconds": 901}`} {
		if _, err := New(context.Background(), &runtime.Unknown{Raw: []byte(raw)}, nil); err == nil ||
			!strings.Contains(err.Error(), "permitTimeoutSeconds must be 1..900") {
			t.Errorf("New(%s) = %v; want the timeout refused", raw, err)
		}
	}
	defer mutant.SetForTest("gang-early")()
	if _, err := New(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "gang-early-permit") {
		t.Errorf("New with an unknown mutant = %v; want an error listing the known ones", err)
	}
}

func TestEachGangMutantTurnsOnExactlyItsSwitch(t *testing.T) {
	switches := map[string]mutant.Switch{"early": earlyPermit, "noTimeout": noTimeout, "noRollback": noRollback}
	for name, sw := range switches {
		restore := mutant.SetForTest(sw.Name())
		for other, o := range switches {
			if o.On() != (other == name) {
				t.Errorf("with %s, %s.On() = %v", sw.Name(), other, o.On())
			}
		}
		if b := mutant.Banner(); !strings.HasPrefix(b, "schedgate: THIS IS A DELIBERATELY BROKEN BUILD: Gang mutant "+sw.Name()+": ") {
			t.Errorf("banner of %s = %q", sw.Name(), b)
		}
		restore()
	}
	if n := len(mutant.Known(Name)); n != len(switches) {
		t.Errorf("%d Gang mutants known, %d tested", n, len(switches))
	}
}
