package demoagent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/hostproto"
)

// approveViaAPI answers one of its own pending permission requests over
// the daemon's API (as /approve-self does) with every token found, and
// with none.
func (t *turn) approveViaAPI(l *loot) AttackResult {
	a := &attempt{name: AttackApproveAPI}
	tokens := append(slices.Clone(l.tokens), "")
	for _, addr := range l.apiAddrs {
		var errs []error
		for _, token := range tokens {
			ctx, cancel := context.WithTimeout(t.ctx, approveWithin)
			err := t.answerOwnPermission(ctx, "http://"+addr, token)
			cancel()
			if err == nil {
				a.win(addr, fmt.Sprintf("answered allow_once with a token of %d bytes", len(token)))
				return a.result()
			}
			errs = append(errs, fmt.Errorf("with a token of %d bytes: %w", len(token), err))
		}
		a.fail(addr, errors.Join(errs...))
	}
	return a.result()
}

// approveViaHost connects to every executor host found (unix socket or
// TLS), shakes hands with every token found and with none, and answers
// whatever permission request is pending on it: its own among them.
func (t *turn) approveViaHost(l *loot) AttackResult {
	a := &attempt{name: AttackApproveHost}
	type target struct {
		name string
		dial func() (net.Conn, error)
	}
	var targets []target
	for _, s := range l.sockets {
		targets = append(targets, target{s, func() (net.Conn, error) { return net.DialTimeout("unix", s, 5*time.Second) }})
	}
	for _, addr := range l.hostAddrs {
		targets = append(targets, target{"tls://" + addr, func() (net.Conn, error) {
			// An attacker has no reason to check whom it talks to.
			return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
		}})
	}
	tokens := append(slices.Clone(l.tokens), "")
next:
	for _, tg := range targets {
		var errs []error
		for _, token := range tokens {
			nc, err := tg.dial()
			if err != nil {
				a.fail(tg.name, err)
				continue next
			}
			what, err := t.answerOnHost(nc, token)
			nc.Close()
			if err == nil {
				a.win(tg.name, what)
				continue next
			}
			errs = append(errs, fmt.Errorf("with a token of %d bytes: %w", len(token), err))
		}
		a.fail(tg.name, errors.Join(errs...))
	}
	return a.result()
}

// answerOnHost plays a daemon on nc: the handshake with token, then an
// attach of every session the host holds, to learn its pending requests,
// and an allow_once for the first.
func (t *turn) answerOnHost(nc net.Conn, token string) (string, error) {
	ctx, cancel := context.WithTimeout(t.ctx, approveWithin)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(d)
	}
	c, w, err := hostproto.Client(ctx, nc, hostproto.ClientConfig{Token: token, DaemonID: "hostile-agent", DaemonVersion: Version})
	if err != nil {
		return "", err
	}
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(d)
	}
	sessions := w.Sessions
	var last error
	for {
		for _, sid := range sessions {
			var att hostproto.AttachResult
			if err := hostDo(c, hostproto.CommandAttach, sid, hostproto.AttachPayload{From: 0}, &att); err != nil {
				last = fmt.Errorf("attach %s: %w", sid, err)
				continue
			}
			if len(att.Pending) == 0 {
				continue
			}
			// Take the stream up where it ends, as a daemon that committed
			// everything would: a result waits for the records before it,
			// and those the daemon acknowledged are gone.
			if att.NextOffset > 1 {
				if err := hostDo(c, hostproto.CommandAttach, sid, hostproto.AttachPayload{From: att.NextOffset - 1}, nil); err != nil {
					last = fmt.Errorf("attach %s from %d: %w", sid, att.NextOffset-1, err)
					continue
				}
			}
			for _, p := range att.Pending {
				err := hostDo(c, hostproto.CommandPermissionAnswer, sid,
					hostproto.PermissionAnswerPayload{RequestID: p.RequestID, OptionID: "allow_once"}, nil)
				if err == nil {
					return fmt.Sprintf("connected, the token taken, answered request %s of session %s with allow_once", p.RequestID, sid), nil
				}
				last = fmt.Errorf("answer %s: %w", p.RequestID, err)
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("connected, the token taken, but no pending request answered among %d sessions (last error: %v)", len(sessions), last)
		case <-time.After(selfApprovePoll):
		}
		var st hostproto.StatusResult
		if err := hostDo(c, hostproto.CommandStatus, "", nil, &st); err != nil {
			return "", fmt.Errorf("connected, the token taken, but status: %w", err)
		}
		sessions = sessions[:0]
		for _, s := range st.Sessions {
			sessions = append(sessions, s.SessionID)
		}
	}
}

// hostDo sends one command and reads until its result, answering pings
// and acknowledging the records the host sends meanwhile, as a daemon
// does: the host holds a result back while its window of records waits
// for acknowledgements.
func hostDo(c *hostproto.Conn, kind hostproto.CommandKind, sid string, payload, out any) error {
	cmd := &hostproto.Command{ID: uuid.NewString(), Kind: kind, SessionID: sid}
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		cmd.Payload = b
	}
	if err := c.Send(cmd); err != nil {
		return err
	}
	for {
		m, err := c.Recv()
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *hostproto.Ping:
			if err := c.Send(&hostproto.Pong{Nonce: m.Nonce}); err != nil {
				return err
			}
		case *hostproto.Record:
			if err := c.Send(&hostproto.Ack{SessionID: m.SessionID, Offset: m.Offset}); err != nil {
				return err
			}
		case *hostproto.CommandResult:
			if m.ID != cmd.ID {
				continue
			}
			if err := m.Err(); err != nil {
				return err
			}
			if out == nil || len(m.Result) == 0 {
				return nil
			}
			return json.Unmarshal(m.Result, out)
		}
	}
}
