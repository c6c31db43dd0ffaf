package executor_test

import (
	"github.com/tether/tether/internal/executor"
	"github.com/tether/tether/internal/sessions"
)

// An executor host's agent is an agent to the session core. (An external
// test package: sessions will import executor.)
var _ sessions.Agent = (*executor.Agent)(nil)
