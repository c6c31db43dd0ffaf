package sessions

import (
	"context"

	"github.com/tether/tether/internal/runtimes"
)

// ExecutorHosts lists the executor hosts the daemon knows, by name.
func (m *Manager) ExecutorHosts(ctx context.Context) ([]runtimes.ExecutorHost, error) {
	return m.cfg.Executors.Hosts(ctx), nil
}
