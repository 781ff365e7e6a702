package networkslots

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

const poolNS, poolName = "kube-system", "slot-claims"

func poolCM(data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: poolNS, Name: poolName, ResourceVersion: "1"}, Data: data}
}

func livePod(uid, name string) *v1.Pod {
	p := mkPod(uid, "1", "")
	p.Name = name
	return p
}

func claims(t *testing.T, client *fake.Clientset) map[string]string {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(poolNS).Get(context.Background(), poolName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

func newTestShared(objs ...runtime.Object) (*shared, *fake.Clientset) {
	client := fake.NewClientset(objs...)
	return newShared(&SharedPool{Namespace: poolNS, Name: poolName}, client, nil), client
}

func TestClaimTakesFreeSlotsAndRefusesTheLastOneTwice(t *testing.T) {
	ctx := context.Background()
	a, b := livePod("a", "pod-a"), livePod("b", "pod-b")
	s, client := newTestShared(poolCM(nil), a, b)

	if st := s.claim(ctx, a, "n1", 1, 1); !st.IsSuccess() {
		t.Fatalf("first claim = %v", st)
	}
	if got := claims(t, client); got["a"] != "ns/pod-a n1 1" || len(got) != 1 {
		t.Errorf("claims = %v", got)
	}
	// Idempotent for the same pod.
	if st := s.claim(ctx, a, "n1", 1, 1); !st.IsSuccess() {
		t.Errorf("repeated claim = %v", st)
	}
	st := s.claim(ctx, b, "n1", 1, 1)
	if st.Code() != fwk.Error || st.Message() != msgClaimRefused("n1") {
		t.Errorf("claim of the taken slot = %v, want Error %q", st, msgClaimRefused("n1"))
	}
	if st := s.claim(ctx, b, "n2", 1, 1); !st.IsSuccess() {
		t.Errorf("claim on another node = %v", st)
	}
	// Release is idempotent and frees the slot.
	for range 2 {
		if err := s.release(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if got := claims(t, client); len(got) != 1 || got["b"] == "" {
		t.Errorf("claims after release = %v", got)
	}
}

func TestClaimRetriesOnConflictAndSeesTheWinnersClaim(t *testing.T) {
	ctx := context.Background()
	a, b := livePod("a", "pod-a"), livePod("b", "pod-b")
	s, client := newTestShared(poolCM(nil), a, b)
	// The first update loses the race: another scheduler claimed the slot for b
	// between our read and our write.
	raced := false
	client.PrependReactor("update", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		if err := client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			poolCM(map[string]string{"b": "ns/pod-b n1 1"}), poolNS); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, poolName, nil)
	})
	st := s.claim(ctx, a, "n1", 1, 1)
	if !raced || st.Code() != fwk.Error || st.Message() != msgClaimRefused("n1") {
		t.Errorf("claim after a lost race = %v (raced %v), want the refusal", st, raced)
	}
	if got := claims(t, client); len(got) != 1 || got["b"] == "" {
		t.Errorf("claims = %v, want only b's", got)
	}
}

func TestClaimGivesUpAfterEndlessConflicts(t *testing.T) {
	a := livePod("a", "pod-a")
	s, client := newTestShared(poolCM(nil), a)
	updates := 0
	client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, poolName, nil)
	})
	if st := s.claim(context.Background(), a, "n1", 1, 1); st.Code() != fwk.Error || updates != maxClaimAttempts {
		t.Errorf("claim = %v after %d updates, want Error after %d", st, updates, maxClaimAttempts)
	}
}

func TestClaimPrunesClaimsOfPodsThatAreGoneOrFinished(t *testing.T) {
	ctx := context.Background()
	a := livePod("a", "pod-a")
	done := livePod("done", "pod-done")
	done.Status.Phase = v1.PodSucceeded
	replaced := livePod("new-uid", "pod-replaced") // same name, another UID: the claimed pod is gone
	s, client := newTestShared(poolCM(map[string]string{
		"gone":     "ns/pod-gone n1 1",
		"done":     "ns/pod-done n1 1",
		"old-uid":  "ns/pod-replaced n1 1",
		"garbage!": "not a claim",
	}), a, done, replaced)
	if st := s.claim(ctx, a, "n1", 1, 1); !st.IsSuccess() {
		t.Fatalf("claim with only stale claims on the node = %v", st)
	}
	if got := claims(t, client); len(got) != 1 || got["a"] == "" {
		t.Errorf("claims = %v, want only a's", got)
	}

	// A claim whose pod the API cannot confirm either way is kept.
	s2, client2 := newTestShared(poolCM(map[string]string{"x": "ns/pod-x n1 1"}), a)
	client2.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	if st := s2.claim(ctx, a, "n1", 1, 1); st.Code() != fwk.Error {
		t.Errorf("claim over an uncertain claim = %v, want refusal", st)
	}
}

func TestPodGoneAndUnreserveRelease(t *testing.T) {
	ctx := context.Background()
	a := livePod("a", "pod-a")
	s, client := newTestShared(poolCM(nil), a)
	pl := &Plugin{args: Args{FaultInjection: true}, shared: s}
	if st := s.claim(ctx, a, "n1", 1, 1); !st.IsSuccess() {
		t.Fatal(st)
	}
	s.unreserve(ctx, a)
	if got := claims(t, client); len(got) != 0 {
		t.Errorf("claims after Unreserve = %v", got)
	}
	// Unreserve without a claim of this process does not touch the API.
	before := len(client.Actions())
	s.unreserve(ctx, a)
	if len(client.Actions()) != before {
		t.Errorf("Unreserve without a claim made %d calls", len(client.Actions())-before)
	}
	if err := (&SharedPool{Name: "x"}).validate(); err == nil {
		t.Error("sharedPool without a namespace accepted")
	}
	var off *shared
	if st := off.prebind(ctx, pl, a, &v1.Node{}); !st.IsSuccess() {
		t.Errorf("prebind without shared = %v", st)
	}
	off.podGone(klog.Background(), a)
}
