package seal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agent-trace-witness/witness/internal/exitcode"
)

func TestParseSpec(t *testing.T) {
	files := map[string]string{"prompt.txt": "Solo lee archivos en /data", "empty.txt": "", "bad.txt": "\xff"}
	readFile := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, errors.New("no such file")
	}
	readTool := `{"name":"read_file","scopes":["read:/data/**"]}`
	tests := []struct {
		name    string
		in      string
		want    *Spec
		wantErr string
	}{
		{name: "prompt inline", in: `{"system_prompt":"p","tools":[` + readTool + `],"witness_id":"w"}`,
			want: &Spec{SystemPrompt: "p", Tools: []Tool{{Name: "read_file", Scopes: []string{"read:/data/**"}}}, WitnessID: "w"}},
		{name: "prompt file", in: `{"system_prompt_file":"prompt.txt","tools":[{"name":"a"}]}`,
			want: &Spec{SystemPrompt: "Solo lee archivos en /data", Tools: []Tool{{Name: "a", Scopes: []string{}}}}},
		{name: "definition hash", in: `{"system_prompt":"p","tools":[{"name":"a","definition_sha256":"` + strings.Repeat("0f", 32) + `"}]}`,
			want: &Spec{SystemPrompt: "p", Tools: []Tool{{Name: "a", Scopes: []string{}, DefinitionSHA256: strings.Repeat("0f", 32)}}}},
		{name: "unknown field", in: `{"system_prompt":"p","tools":[{"name":"a"}],"model":"x"}`, wantErr: "a.json:1:45: $.model: unknown field"},
		{name: "unknown tool field", in: "{\"system_prompt\":\"p\",\n\"tools\":[{\"name\":\"a\",\n\"scope\":[]}]}", wantErr: "a.json:3:1: $.tools[0].scope: unknown field"},
		{name: "both prompts", in: `{"system_prompt":"p","system_prompt_file":"prompt.txt","tools":[{"name":"a"}]}`, wantErr: "not both"},
		{name: "no prompt", in: `{"tools":[{"name":"a"}]}`, wantErr: "$.system_prompt: missing"},
		{name: "empty prompt", in: `{"system_prompt":"","tools":[{"name":"a"}]}`, wantErr: "non-empty"},
		{name: "null prompt (0.1.0 signed \"None\")", in: `{"system_prompt":null,"tools":[{"name":"a"}]}`, wantErr: "want a string, got null"},
		{name: "missing prompt file", in: `{"system_prompt_file":"nope.txt","tools":[{"name":"a"}]}`, wantErr: "cannot read nope.txt"},
		{name: "empty prompt file", in: `{"system_prompt_file":"empty.txt","tools":[{"name":"a"}]}`, wantErr: "empty.txt is empty"},
		{name: "prompt file not UTF-8", in: `{"system_prompt_file":"bad.txt","tools":[{"name":"a"}]}`, wantErr: "not valid UTF-8"},
		{name: "no tools", in: `{"system_prompt":"p","tools":[]}`, wantErr: "at least one tool"},
		{name: "tools missing", in: `{"system_prompt":"p"}`, wantErr: "$.tools: missing"},
		{name: "tools not a list", in: `{"system_prompt":"p","tools":{}}`, wantErr: "$.tools: want a array, got object"},
		{name: "string scopes (0.1.0 split it into characters)", in: `{"system_prompt":"p","tools":[{"name":"a","scopes":"abc"}]}`, wantErr: "tools[0].scopes: want a array, got string"},
		{name: "numeric scope", in: `{"system_prompt":"p","tools":[{"name":"a","scopes":[1]}]}`, wantErr: "tools[0].scopes[0]: want a string, got number"},
		{name: "missing name", in: `{"system_prompt":"p","tools":[{"scopes":[]}]}`, wantErr: "tools[0].name: missing"},
		{name: "duplicate tool", in: `{"system_prompt":"p","tools":[{"name":"a"},{"name":"a"}]}`, wantErr: `tool "a" is listed twice`},
		{name: "bad definition hash", in: `{"system_prompt":"p","tools":[{"name":"a","definition_sha256":"xyz"}]}`, wantErr: "64 lowercase hex"},
		{name: "numeric witness_id", in: `{"system_prompt":"p","tools":[{"name":"a"}],"witness_id":7}`, wantErr: "witness_id: want a string"},
		{name: "not JSON", in: `{"system_prompt":`, wantErr: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSpec([]byte(tt.in), "a.json", readFile)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("parsed: %+v", got)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
				}
				if exitcode.Of(err) != exitcode.Usage {
					t.Errorf("exit %v, want usage", exitcode.Of(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadSpecPromptFileRelativeToSpec(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "specs"), 0o755)
	os.WriteFile(filepath.Join(dir, "specs", "prompt.md"), []byte("line 1\nline 2\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "specs", "agent.json"), []byte(`{"system_prompt_file":"prompt.md","tools":[{"name":"a"}]}`), 0o644)
	sp, err := LoadSpec(filepath.Join(dir, "specs", "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.SystemPrompt != "line 1\nline 2\n" {
		t.Errorf("prompt %q: the file's exact bytes (with the trailing newline) must be hashed", sp.SystemPrompt)
	}
}

func TestNewBodyPrecedence(t *testing.T) {
	fixed := time.Date(2026, 8, 30, 14, 33, 0, 0, time.UTC)
	withMicro := fixed.Add(123456 * time.Microsecond)
	tests := []struct {
		name          string
		flag, specID  string
		env           map[string]string
		now           time.Time
		wantID, wantT string
		wantErr       bool
	}{
		{name: "flag wins", flag: "f", specID: "s", env: map[string]string{"ATW_WITNESS_ID": "e"}, now: fixed, wantID: "f", wantT: "2026-08-30T14:33:00+00:00"},
		{name: "spec next", specID: "s", env: map[string]string{"ATW_WITNESS_ID": "e"}, now: fixed, wantID: "s", wantT: "2026-08-30T14:33:00+00:00"},
		{name: "env next", env: map[string]string{"ATW_WITNESS_ID": "e"}, now: fixed, wantID: "e", wantT: "2026-08-30T14:33:00+00:00"},
		{name: "default", now: withMicro, wantID: "witness-cli-local", wantT: "2026-08-30T14:33:00.123456+00:00"},
		{name: "ATW_WITNESS_TS wins over the clock", env: map[string]string{"ATW_WITNESS_TS": "2026-01-02T03:04:05+00:00"}, now: withMicro, wantID: "witness-cli-local", wantT: "2026-01-02T03:04:05+00:00"},
		{name: "bad ATW_WITNESS_TS", env: map[string]string{"ATW_WITNESS_TS": "yesterday"}, now: fixed, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := &Spec{SystemPrompt: "p", Tools: []Tool{{Name: "a", Scopes: []string{}}}, WitnessID: tt.specID}
			b, err := NewBody(sp, BodyOptions{WitnessID: tt.flag, Getenv: func(k string) string { return tt.env[k] }, Now: func() time.Time { return tt.now }})
			if tt.wantErr {
				if exitcode.Of(err) != exitcode.Usage {
					t.Errorf("err %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.WitnessID != tt.wantID || b.CreatedAt != tt.wantT {
				t.Errorf("got %q %q, want %q %q", b.WitnessID, b.CreatedAt, tt.wantID, tt.wantT)
			}
		})
	}
}

func TestPythonISO(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 8, 30, 14, 33, 0, 0, time.UTC), "2026-08-30T14:33:00+00:00"},
		{time.Date(2026, 8, 30, 14, 33, 0, 1000, time.UTC), "2026-08-30T14:33:00.000001+00:00"},
		{time.Date(2026, 8, 30, 14, 33, 0, 999, time.UTC), "2026-08-30T14:33:00+00:00"}, // below a microsecond: truncated
		{time.Date(2026, 8, 30, 16, 33, 0, 500000000, time.FixedZone("CEST", 7200)), "2026-08-30T14:33:00.500000+00:00"},
	}
	for _, tt := range tests {
		if got := pythonISO(tt.t); got != tt.want {
			t.Errorf("PythonISO(%v) = %s, want %s", tt.t, got, tt.want)
		}
	}
}
