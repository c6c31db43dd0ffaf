package server

import (
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/sessions"
)

// Sandbox policies between the contract's SandboxPolicy and
// internal/sandbox's Policy: a list the client left out stays nil (the
// layer below decides), one it sent empty stays empty (none).

// policyIn is the policy a request carries; the zero policy for none.
func policyIn(p *SandboxPolicy) sandbox.Policy {
	if p == nil {
		return sandbox.Policy{}
	}
	out := sandbox.Policy{Mode: string(deref(p.Mode)), Network: string(deref(p.Network))}
	if p.Writable != nil {
		out.Writable = append([]string{}, *p.Writable...)
	}
	if p.Readable != nil {
		out.Readable = append([]string{}, *p.Readable...)
	}
	if p.Ports != nil {
		out.Ports = append([]int{}, *p.Ports...)
	}
	return out
}

// policyOut is p as the API shows it; nil for a policy that says nothing.
func policyOut(p sandbox.Policy) *SandboxPolicy {
	if p.IsZero() {
		return nil
	}
	out := &SandboxPolicy{}
	if p.Mode != "" {
		m := SandboxPolicyMode(p.Mode)
		out.Mode = &m
	}
	if p.Network != "" {
		n := SandboxPolicyNetwork(p.Network)
		out.Network = &n
	}
	if p.Writable != nil {
		out.Writable = &p.Writable
	}
	if p.Readable != nil {
		out.Readable = &p.Readable
	}
	if p.Ports != nil {
		out.Ports = &p.Ports
	}
	return out
}

// storedPolicyOut is a session's stored policy as the API shows it.
func storedPolicyOut(raw []byte) *SandboxPolicy {
	p, err := sandbox.Decode(raw)
	if err != nil {
		return nil
	}
	return policyOut(p)
}

// sandboxViewOut is a session status's sandbox.
func sandboxViewOut(v sessions.SandboxView) *SessionSandbox {
	return &SessionSandbox{Mode: SessionSandboxMode(v.Mode), Network: SessionSandboxNetwork(v.Network),
		State: SessionSandboxState(v.State), Reason: ptrIf(v.Reason)}
}
