package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// exposition writes the Prometheus text format (version 0.0.4) by hand:
// every family gets its HELP and TYPE lines once, before its samples.
type exposition struct {
	b    strings.Builder
	seen map[string]bool
}

// label is one name="value" pair of a sample.
type label struct{ name, value string }

// family starts a metric family. Declaring one twice is a programming
// error that would make the whole scrape invalid, so it panics (the
// handler's recover turns it into a 500 and a log line with the stack).
func (x *exposition) family(name, typ, help string) {
	if x.seen == nil {
		x.seen = map[string]bool{}
	}
	if x.seen[name] {
		panic(fmt.Sprintf("metrics: family %s declared twice", name))
	}
	x.seen[name] = true
	fmt.Fprintf(&x.b, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// sample writes one sample line of the family last declared.
func (x *exposition) sample(name string, labels []label, v float64) {
	x.b.WriteString(name)
	if len(labels) > 0 {
		x.b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				x.b.WriteByte(',')
			}
			x.b.WriteString(l.name)
			x.b.WriteString(`="`)
			x.b.WriteString(escapeLabel(l.value))
			x.b.WriteByte('"')
		}
		x.b.WriteByte('}')
	}
	x.b.WriteByte(' ')
	x.b.WriteString(formatValue(v))
	x.b.WriteByte('\n')
}

// single declares a family with one unlabelled sample.
func (x *exposition) single(name, typ, help string, v float64) {
	x.family(name, typ, help)
	x.sample(name, nil, v)
}

func (x *exposition) String() string { return x.b.String() }

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64) // counts as integers, not 3.5e+07
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
