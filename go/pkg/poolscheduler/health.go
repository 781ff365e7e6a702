package poolscheduler

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// HealthHandler serves GET /healthz and /readyz: 200 "ok" once the caches
// have synced and this process schedules (leads), 503 before.
func (s *Scheduler) HealthHandler() http.Handler {
	check := func(w http.ResponseWriter, _ *http.Request) {
		if !s.Healthy() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", check)
	mux.HandleFunc("GET /readyz", check)
	return mux
}

// ServeHealth listens on addr (host:port) and serves h until ctx ends. It
// returns once listening, or the error if it cannot listen.
func ServeHealth(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "health server stopped", "address", addr)
		}
	}()
	return nil
}
