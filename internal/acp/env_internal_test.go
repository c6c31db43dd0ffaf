package acp

import (
	"slices"
	"strings"
	"testing"
)

func TestAgentEnv(t *testing.T) {
	daemon := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
		"HTTPS_PROXY=http://proxy:3128", "SSL_CERT_FILE=/etc/ca.pem",
		"TETHER_TOKEN=secret", "TETHER_ADDR=127.0.0.1:7777", "tether_token=lower",
		"ANTHROPIC_API_KEY=sk-a", "ANTHROPIC_BASE_URL=https://a", "OPENAI_API_KEY=sk-o",
		"AWS_SECRET_ACCESS_KEY=aws", "NOEQUALS", "=hidden",
	}
	allowed := []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
		"HTTPS_PROXY=http://proxy:3128", "SSL_CERT_FILE=/etc/ca.pem"}
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{name: "allow-list only", want: allowed},
		{name: "profile env appended (wins over inherited)", spec: Spec{Env: []string{"FOO=bar", "PATH=/opt/bin"}},
			want: append(slices.Clone(allowed), "FOO=bar", "PATH=/opt/bin")},
		{name: "exact passthrough", spec: Spec{Passthrough: []string{"OPENAI_API_KEY", "MISSING"}},
			want: append(slices.Clone(allowed), "OPENAI_API_KEY=sk-o")},
		{name: "prefix passthrough", spec: Spec{Passthrough: []string{"ANTHROPIC_*"}},
			want: append(slices.Clone(allowed), "ANTHROPIC_API_KEY=sk-a", "ANTHROPIC_BASE_URL=https://a")},
		{name: "passthrough never lets TETHER_ through", spec: Spec{Passthrough: []string{"T*", "TETHER_TOKEN", "tether_token"}},
			want: allowed},
		{name: "a profile may set a TETHER_ variable itself", spec: Spec{Env: []string{"TETHER_ADDR=agent-specific"}},
			want: append(slices.Clone(allowed), "TETHER_ADDR=agent-specific")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agentEnv(daemon, tt.spec)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckPassthrough(t *testing.T) {
	tests := []struct {
		name, entry string
		wantErr     string // substring; "" means valid
	}{
		{name: "name", entry: "ANTHROPIC_API_KEY"},
		{name: "prefix", entry: "OPENAI_*"},
		{name: "lower case", entry: "http_token"},
		{name: "empty", entry: "", wantErr: "invalid"},
		{name: "star alone", entry: "*", wantErr: "invalid"},
		{name: "star inside", entry: "A*B", wantErr: "invalid"},
		{name: "equals sign", entry: "A=B", wantErr: "invalid"},
		{name: "daemon token", entry: "TETHER_TOKEN", wantErr: "never passed"},
		{name: "daemon prefix", entry: "TETHER_*", wantErr: "never passed"},
		{name: "daemon token in lower case", entry: "tether_token", wantErr: "never passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPassthrough(tt.entry)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
