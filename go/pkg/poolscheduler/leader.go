package poolscheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// The lease timing: short, so that a standby takes over quickly in tests.
const (
	leaseDuration = 8 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = 1 * time.Second
)

// ErrLeadershipLost is what RunLeaderElected returns when this process
// stopped leading before ctx ended.
var ErrLeadershipLost = errors.New("leadership lost")

// Identity is this process's name in the lease: the host name and a random
// suffix, so that two processes on one host differ.
func Identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "_" + utilrand.String(8)
}

// RunLeaderElected runs run while this process holds the lease
// namespace/name. It returns nil once ctx ends, and ErrLeadershipLost if the
// lease was lost first (the caller should exit: run's context is cancelled,
// but binds in flight may still finish).
func RunLeaderElected(ctx context.Context, client kubernetes.Interface, namespace, name string, run func(context.Context)) error {
	logger := klog.FromContext(ctx)
	id := Identity()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("started leading", "lease", namespace+"/"+name, "identity", id)
				run(ctx)
			},
			OnStoppedLeading: func() {
				logger.Info("stopped leading", "lease", namespace+"/"+name, "identity", id)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					logger.Info("another process leads", "lease", namespace+"/"+name, "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return ErrLeadershipLost
}
