package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, tm, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: modified},
		}}
	}
	cases := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{
			name: "make stamps win over the toolchain's record", version: "1.2.3", commit: "abc123", date: "2026-12-01T10:00:00Z",
			bi:   vcs("fff", "2020-01-01T00:00:00Z", "true"),
			want: Info{Version: "1.2.3", Commit: "abc123", Date: "2026-12-01T10:00:00Z", API: "0.1.0"},
		},
		{
			name: "make stamps a dirty tree", version: "0.1.0-dev", commit: "abc123-dirty",
			want: Info{Version: "0.1.0-dev", Commit: "abc123", Modified: true, API: "0.1.0"},
		},
		{
			name: "go install of a tagged module", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}},
			want: Info{Version: "0.2.0", API: "0.1.0"},
		},
		{
			name: "go build in a git checkout", bi: vcs("0123abcd", "2026-11-30T08:00:00Z", "true"),
			want: Info{Version: "devel", Commit: "0123abcd", Date: "2026-11-30T08:00:00Z", Modified: true, API: "0.1.0"},
		},
		{
			name: "nothing recorded", want: Info{Version: "devel", API: "0.1.0"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := resolve(c.version, c.commit, c.date, c.bi, "0.1.0")
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestStringNamesEveryField(t *testing.T) {
	got := Info{Version: "1.2.3", Commit: "abc", Date: "2026-12-01T10:00:00Z", Modified: true, API: "0.1.0"}.String()
	for _, want := range []string{"tetherd 1.2.3", "api 0.1.0", "commit: abc-dirty", "built:  2026-12-01T10:00:00Z"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want it to contain %q", got, want)
		}
	}
}
