package server_test

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// promSample is one parsed sample line.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// promFamily is one metric family of a scrape.
type promFamily struct {
	name, typ, help string
	samples         []promSample
}

var (
	metricNameRe = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRe  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition parses the Prometheus text format strictly: every family
// has HELP then TYPE before its samples, no family appears twice, every
// sample belongs to the family declared last (with the _bucket, _sum and
// _count suffixes for histograms), labels are well formed and unique per
// sample, values are floats, no series repeats, and histogram buckets are
// cumulative with le="+Inf" equal to _count.
func parseExposition(t *testing.T, text string) map[string]*promFamily {
	t.Helper()
	fams := map[string]*promFamily{}
	var cur *promFamily
	series := map[string]bool{}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("exposition does not end with a newline")
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) {
			t.Fatalf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "":
			fail("empty line")
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if !metricNameRe.MatchString(name) {
				fail("bad metric name")
			}
			if _, dup := fams[name]; dup {
				fail("family %s declared twice", name)
			}
			cur = &promFamily{name: name, help: help}
			fams[name] = cur
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			if cur == nil || cur.name != name || cur.typ != "" || len(cur.samples) > 0 {
				fail("TYPE must follow the HELP of the same family, once, before samples")
			}
			switch typ {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				fail("unknown type %q", typ)
			}
			cur.typ = typ
		case strings.HasPrefix(line, "#"):
			fail("unexpected comment")
		default:
			s := parseSample(t, line)
			if cur == nil || cur.typ == "" {
				fail("sample before HELP and TYPE")
			}
			if !belongs(cur, s.name) {
				fail("sample %s outside its family %s (%s)", s.name, cur.name, cur.typ)
			}
			key := s.name + fmt.Sprint(s.labels)
			if series[key] {
				fail("series repeated")
			}
			series[key] = true
			cur.samples = append(cur.samples, s)
		}
	}
	for _, f := range fams {
		if f.typ == "" {
			t.Fatalf("family %s has no TYPE", f.name)
		}
		if f.typ == "counter" || f.typ == "histogram" {
			for _, s := range f.samples {
				if s.value < 0 || math.IsNaN(s.value) {
					t.Fatalf("%s%v: got %v, want a non-negative count", s.name, s.labels, s.value)
				}
			}
		}
		if f.typ == "histogram" {
			checkHistogram(t, f)
		}
	}
	return fams
}

func belongs(f *promFamily, name string) bool {
	if f.typ == "histogram" {
		return name == f.name+"_bucket" || name == f.name+"_sum" || name == f.name+"_count"
	}
	return name == f.name
}

// parseSample parses `name{a="x",b="y"} value`.
func parseSample(t *testing.T, line string) promSample {
	t.Helper()
	s := promSample{labels: map[string]string{}}
	rest := line
	end := strings.IndexAny(rest, "{ ")
	if end < 0 {
		t.Fatalf("sample %q: no value", line)
	}
	s.name, rest = rest[:end], rest[end:]
	if !metricNameRe.MatchString(s.name) {
		t.Fatalf("sample %q: bad metric name", line)
	}
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			name, after, ok := strings.Cut(rest, `="`)
			if !ok || !labelNameRe.MatchString(name) {
				t.Fatalf("sample %q: bad label near %q", line, rest)
			}
			var val strings.Builder
			j := 0
			for ; j < len(after) && after[j] != '"'; j++ {
				if after[j] == '\\' {
					j++
					if j == len(after) {
						break
					}
					switch after[j] {
					case '\\', '"':
						val.WriteByte(after[j])
					case 'n':
						val.WriteByte('\n')
					default:
						t.Fatalf("sample %q: bad escape \\%c", line, after[j])
					}
					continue
				}
				val.WriteByte(after[j])
			}
			if j >= len(after) {
				t.Fatalf("sample %q: unterminated label value", line)
			}
			if _, dup := s.labels[name]; dup {
				t.Fatalf("sample %q: label %s twice", line, name)
			}
			s.labels[name] = val.String()
			rest = after[j+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				t.Fatalf("sample %q: expected , or } near %q", line, rest)
			}
		}
		rest = rest[1:]
	}
	if !strings.HasPrefix(rest, " ") {
		t.Fatalf("sample %q: expected a space before the value", line)
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		t.Fatalf("sample %q: want value [timestamp]", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		t.Fatalf("sample %q: value: %v", line, err)
	}
	s.value = v
	return s
}

// checkHistogram checks every series of a histogram family: buckets in
// increasing le order, cumulative, ending in +Inf equal to _count, with a _sum.
func checkHistogram(t *testing.T, f *promFamily) {
	t.Helper()
	type agg struct {
		les    []float64
		counts []float64
		sum    bool
		count  float64
		hasCnt bool
	}
	bySeries := map[string]*agg{}
	for _, s := range f.samples {
		base := map[string]string{}
		for k, v := range s.labels {
			if k != "le" {
				base[k] = v
			}
		}
		key := fmt.Sprint(base)
		a := bySeries[key]
		if a == nil {
			a = &agg{}
			bySeries[key] = a
		}
		switch s.name {
		case f.name + "_bucket":
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			if err != nil {
				t.Fatalf("%s%v: le: %v", s.name, s.labels, err)
			}
			a.les, a.counts = append(a.les, le), append(a.counts, s.value)
		case f.name + "_sum":
			a.sum = true
		case f.name + "_count":
			a.count, a.hasCnt = s.value, true
		}
	}
	for key, a := range bySeries {
		if !a.sum || !a.hasCnt || len(a.les) == 0 {
			t.Fatalf("%s%s: want buckets, _sum and _count", f.name, key)
		}
		for i := 1; i < len(a.les); i++ {
			if a.les[i] <= a.les[i-1] || a.counts[i] < a.counts[i-1] {
				t.Fatalf("%s%s: buckets not increasing and cumulative at le=%v", f.name, key, a.les[i])
			}
		}
		if last := len(a.les) - 1; !math.IsInf(a.les[last], 1) || a.counts[last] != a.count {
			t.Fatalf("%s%s: last bucket le=%v count %v, want +Inf with _count %v", f.name, key, a.les[last], a.counts[last], a.count)
		}
	}
}

// value returns the value of the first sample called name whose labels
// include want, and whether there is one.
func (f *promFamily) value(name string, want map[string]string) (float64, bool) {
	for _, s := range f.samples {
		ok := s.name == name
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			return s.value, true
		}
	}
	return 0, false
}
