package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// eventContract checks SSE frames against the contract's TetherEvent: the
// frame's event name picks the member of the oneOf (its discriminator
// mapping), whose data schema the parsed data must satisfy, with no member
// the schema does not declare (the *Data schemas allow extra members, so
// the check names undeclared ones itself: a payload field clients read must
// be in the contract).
type eventContract struct {
	// events maps an event name to the schema of its frame ({type, id, data}).
	events map[string]*openapi3.Schema
}

var (
	contractOnce sync.Once
	contractDoc  *openapi3.T
	contractErr  error
)

// loadEventContract reads api/openapi.yaml once per test binary.
func loadEventContract(t *testing.T) *eventContract {
	t.Helper()
	contractOnce.Do(func() {
		contractDoc, contractErr = openapi3.NewLoader().LoadFromData(mustRead(t, "../api/openapi.yaml"))
		if contractErr == nil {
			contractErr = contractDoc.Validate(context.Background())
		}
	})
	if contractErr != nil {
		t.Fatalf("load contract: %v", contractErr)
	}
	te := contractDoc.Components.Schemas["TetherEvent"]
	if te == nil || te.Value.Discriminator == nil {
		t.Fatal("contract: TetherEvent with a discriminator is missing")
	}
	c := &eventContract{events: map[string]*openapi3.Schema{}}
	for name, ref := range te.Value.Discriminator.Mapping {
		key := strings.TrimPrefix(ref.Ref, "#/components/schemas/")
		s := contractDoc.Components.Schemas[key]
		if s == nil {
			t.Fatalf("contract: %s maps to missing schema %s", name, ref.Ref)
		}
		c.events[name] = s.Value
	}
	return c
}

// check validates one frame; heartbeats (comments only) and bare retry
// frames carry no event and pass.
func (c *eventContract) check(f sseFrame) error {
	if f.Event == "" && f.Data == "" {
		return nil
	}
	schema, ok := c.events[f.Event]
	if !ok {
		return fmt.Errorf("event %q is not a TetherEvent type of the contract", f.Event)
	}
	var data any
	if err := json.Unmarshal([]byte(f.Data), &data); err != nil {
		return fmt.Errorf("event %s: data is not JSON: %v", f.Event, err)
	}
	frame := map[string]any{"type": f.Event, "data": data}
	if f.HasID {
		frame["id"] = f.ID
	}
	if err := schema.VisitJSON(frame, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("event %s does not match the contract: %v", f.Event, err)
	}
	ds := schema.Properties["data"]
	if ds == nil {
		return fmt.Errorf("event %s: contract declares no data", f.Event)
	}
	if obj, ok := data.(map[string]any); ok {
		declared := map[string]bool{}
		declaredMembers(ds.Value, declared)
		var extra []string
		for k := range obj {
			if !declared[k] {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fmt.Errorf("event %s: data members %v are not in the contract", f.Event, extra)
		}
	}
	return nil
}

// declaredMembers collects the properties a schema declares through allOf.
func declaredMembers(s *openapi3.Schema, into map[string]bool) {
	for k := range s.Properties {
		into[k] = true
	}
	for _, sub := range s.AllOf {
		declaredMembers(sub.Value, into)
	}
}

// checkLog validates every event the daemon's store holds as the SSE frame
// a stream would carry for it (the frame's data is the stored payload), so
// events no test streams are checked too. It runs as the daemon stops.
func (d *daemon) checkLog(st *store.Store) {
	d.t.Helper()
	c := loadEventContract(d.t)
	ctx := context.Background()
	check := func(e store.Event) {
		f := sseFrame{ID: fmt.Sprintf("seq %d of %s", e.Seq, e.SessionID), HasID: true, Event: e.Type, Data: string(e.Payload)}
		if e.SessionID == "" {
			f.ID = fmt.Sprintf("global %d", e.ID)
		}
		if err := c.check(f); err != nil {
			d.t.Errorf("stored event %s: %v\ndata: %s", f.ID, err, f.Data)
		}
	}
	for after := ""; ; {
		page, next, err := st.ListSessions(ctx, store.SessionFilter{Limit: store.MaxSessionPageSize, After: after})
		if err != nil {
			d.t.Errorf("check log: list sessions: %v", err)
			return
		}
		for _, s := range page {
			for seq := int64(0); ; {
				evs, err := st.ListSessionEvents(ctx, s.ID, seq, 1000)
				if err != nil {
					d.t.Errorf("check log: session %s: %v", s.ID, err)
					return
				}
				if len(evs) == 0 {
					break
				}
				for _, e := range evs {
					check(e)
				}
				seq = evs[len(evs)-1].Seq
			}
		}
		if after = next; after == "" {
			break
		}
	}
	// Task-level events belong to no session; the global log has them.
	for id := int64(0); ; {
		evs, err := st.ListGlobalEvents(ctx, id, 1000)
		if err != nil {
			d.t.Errorf("check log: global events: %v", err)
			return
		}
		if len(evs) == 0 {
			return
		}
		for _, e := range evs {
			if e.SessionID == "" {
				check(e)
			}
		}
		id = evs[len(evs)-1].ID
	}
}

// TestEventContractCheck shows the frame check rejects what the contract
// rules out, so the suites' frames passing it means something.
func TestEventContractCheck(t *testing.T) {
	c := loadEventContract(t)
	cases := []struct {
		name    string
		frame   sseFrame
		wantErr string
	}{
		{"heartbeat", sseFrame{Comments: []string{"heartbeat"}}, ""},
		{"durable event", sseFrame{ID: "e:1", HasID: true, Event: "turn.started",
			Data: `{"sessionId":"s","promptId":"p","kind":"prompt","startedAt":"2026-01-01T00:00:00Z"}`}, ""},
		{"control frame", sseFrame{Event: "replay_complete", Data: `{"cursor":"e:3"}`}, ""},
		{"missing required member", sseFrame{ID: "e:1", HasID: true, Event: "message.chunk", Data: `{"role":"agent","text":"x"}`}, `"messageId" is missing`},
		{"value outside its enum", sseFrame{ID: "e:1", HasID: true, Event: "turn.started", Data: `{"kind":"sideways"}`}, "kind"},
		{"wrong type", sseFrame{ID: "e:1", HasID: true, Event: "message.chunk", Data: `{"messageId":"one","role":"agent","text":"x"}`}, "messageId"},
		{"undeclared member", sseFrame{ID: "e:1", HasID: true, Event: "session.closed", Data: `{"state":"COMPLETED","why":"done"}`}, "[why] are not in the contract"},
		{"unknown event", sseFrame{ID: "e:1", HasID: true, Event: "turn.exploded", Data: `{}`}, "not a TetherEvent type"},
		{"control frame without its cursor", sseFrame{Event: "stream_lagged", Data: `{}`}, `"cursor" is missing`},
		{"data that is not JSON", sseFrame{Event: "replay_complete", Data: `cursor`}, "not JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.check(tc.frame)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// payloadTypes are the Go types of the events' data, each named like the
// *Data schema of the contract it implements: one per stored event type
// (events.Types) and the control frames.
func payloadTypes() []reflect.Type {
	out := []reflect.Type{reflect.TypeOf(events.ResyncRequiredData{}), reflect.TypeOf(events.ReplayCompleteData{}),
		reflect.TypeOf(events.StreamLaggedData{})}
	seen := map[reflect.Type]bool{}
	for _, typ := range events.Types() {
		p, _ := events.NewPayload(typ)
		t := reflect.TypeOf(p).Elem()
		if t.NumField() == 1 && t.Field(0).Anonymous && t.Field(0).Type.Kind() == reflect.Struct &&
			t.Field(0).Type.Name() != "EventCommon" {
			// Another payload under a second type name
			// (ToolCallStartedData is ToolCallData): its schema is that one's.
			t = t.Field(0).Type
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// TestPayloadTypesMatchContract checks each Go payload type against its
// *Data schema member by member: the same names, required members never
// omitted, and every event type's data schema has its Go type. The
// Common members (sessionId, taskId, promptId) are the writer's to fill.
func TestPayloadTypesMatchContract(t *testing.T) {
	loadEventContract(t)
	schemas := contractDoc.Components.Schemas
	covered := map[string]bool{}
	for _, typ := range payloadTypes() {
		t.Run(typ.Name(), func(t *testing.T) {
			ref := schemas[typ.Name()]
			if ref == nil {
				t.Fatalf("contract has no schema %s", typ.Name())
			}
			covered[typ.Name()] = true
			declared, required := map[string]bool{}, map[string]bool{}
			declaredMembers(ref.Value, declared)
			requiredMembers(ref.Value, required)
			fields := jsonFields(typ)
			for name, omit := range fields {
				if !declared[name] {
					t.Errorf("field %q is not in the contract", name)
				}
				if required[name] && omit && !commonMembers[name] {
					t.Errorf("required member %q is omitempty", name)
				}
			}
			for name := range declared {
				if _, ok := fields[name]; !ok {
					t.Errorf("contract member %q has no field", name)
				}
			}
		})
	}
	for name, ref := range loadEventContract(t).events {
		data := ref.Properties["data"]
		if key := strings.TrimPrefix(data.Ref, "#/components/schemas/"); !covered[key] {
			t.Errorf("event %s: data schema %s has no Go type in payloadTypes", name, key)
		}
	}
}

// commonMembers are session.EventCommon's members.
var commonMembers = map[string]bool{"sessionId": true, "taskId": true, "promptId": true}

// requiredMembers collects the required members of a schema through allOf.
func requiredMembers(s *openapi3.Schema, into map[string]bool) {
	for _, k := range s.Required {
		into[k] = true
	}
	for _, sub := range s.AllOf {
		requiredMembers(sub.Value, into)
	}
}

// jsonFields maps the JSON member names of a struct (embedded structs
// flattened, as encoding/json does) to whether they are omitempty.
func jsonFields(typ reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = strings.Contains(opts, "omitempty")
	}
	return out
}
