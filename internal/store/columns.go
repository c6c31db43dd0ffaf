package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"
)

// This file holds the column encodings shared by the row structs: timestamps
// and JSON text.

// timeLayout is fixed-width (always nine fractional digits, always UTC "Z"),
// so comparing the stored text compares the instants. RFC3339Nano trims
// trailing zeros and would sort "…05Z" after "…05.1Z".
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// dbTime is a timestamp column. A struct (rather than time.Time) keeps gorm
// from applying its own time handling and the driver from choosing a format.
type dbTime struct{ t time.Time }

// Value implements driver.Valuer.
func (d dbTime) Value() (driver.Value, error) { return d.t.UTC().Format(timeLayout), nil }

// Scan implements sql.Scanner; it accepts any RFC 3339 text so rows written by
// hand (or by an older layout) still load.
func (d *dbTime) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case time.Time:
		d.t = v.UTC()
		return nil
	default:
		return fmt.Errorf("store: cannot scan %T into a timestamp", src)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("store: bad timestamp %q: %w", s, err)
	}
	d.t = t.UTC()
	return nil
}

func toDBTime(t time.Time) dbTime { return dbTime{t: t.UTC()} }

func toDBTimePtr(t *time.Time) *dbTime {
	if t == nil {
		return nil
	}
	d := toDBTime(*t)
	return &d
}

func fromDBTimePtr(d *dbTime) *time.Time {
	if d == nil {
		return nil
	}
	t := d.t
	return &t
}

// jsonText maps an optional JSON value to a nullable TEXT column: nil stays
// NULL so "absent" survives the round trip.
func jsonText(raw json.RawMessage) *string {
	if raw == nil {
		return nil
	}
	s := string(raw)
	return &s
}

func fromJSONText(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// stringsJSON encodes a list column; nil is stored as [] because these lists
// are never "absent", only empty.
func stringsJSON(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v) // a []string always marshals
	return string(b)
}

func fromStringsJSON(s, column string) ([]string, error) {
	out := []string{}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", column, err)
	}
	if out == nil { // the text was "null"
		out = []string{}
	}
	return out, nil
}

func mapJSON(v map[string]string) string {
	if v == nil {
		v = map[string]string{}
	}
	b, _ := json.Marshal(v) // a map[string]string always marshals
	return string(b)
}

func fromMapJSON(s, column string) (map[string]string, error) {
	out := map[string]string{}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("store: decode %s: %w", column, err)
	}
	if out == nil {
		out = map[string]string{}
	}
	return out, nil
}

// objectText is the text of a JSON object column: empty or null is "{}".
func objectText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	return string(raw)
}
