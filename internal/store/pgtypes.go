package store

import (
	"context"
	"database/sql/driver"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// flagInt8 is PostgreSQL's int8 codec that also takes a Go bool (as 0 or
// 1): the schema keeps SQLite's 0/1 flags (so that every statement reads
// the same on both databases), and the store binds Go bools to them as
// the SQLite driver does.
type flagInt8 struct{ pgtype.Int8Codec }

// PlanEncode implements pgtype.Codec.
func (c flagInt8) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	switch value.(type) {
	case bool, *bool:
		inner := c.Int8Codec.PlanEncode(m, oid, format, int64(0))
		if inner == nil {
			return nil
		}
		return flagPlan{inner}
	}
	return c.Int8Codec.PlanEncode(m, oid, format, value)
}

type flagPlan struct{ inner pgtype.EncodePlan }

func (p flagPlan) Encode(value any, buf []byte) ([]byte, error) {
	var b bool
	switch v := value.(type) {
	case bool:
		b = v
	case *bool:
		if v == nil {
			return nil, nil
		}
		b = *v
	}
	n := int64(0)
	if b {
		n = 1
	}
	return p.inner.Encode(n, buf)
}

// registerFlags gives a new connection flagInt8 for int8.
func registerFlags(_ context.Context, conn *pgx.Conn) error {
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "int8", OID: pgtype.Int8OID, Codec: flagInt8{}})
	return nil
}

// textArray binds a []string as one PostgreSQL text[] argument (gorm
// would expand a plain slice into a list of arguments).
type textArray []string

// Value implements driver.Valuer: an array literal, every element quoted.
func (a textArray) Value() (driver.Value, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range s {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// int8Array binds a []int64 as one PostgreSQL bigint[] argument.
type int8Array []int64

// Value implements driver.Valuer.
func (a int8Array) Value() (driver.Value, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(n, 10))
	}
	b.WriteByte('}')
	return b.String(), nil
}
