package udf

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Marshal encodes JSON with sorted object keys and without HTML escaping: the canonical text.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Canonical turns what a handler returned into canonical JSON text, so that answers from different
// codecs (Go, gopher-lua, cjson…) compare byte for byte. A string or []byte result must be JSON text.
func Canonical(v any) (string, error) {
	var text []byte
	switch x := v.(type) {
	case string:
		text = []byte(x)
	case []byte:
		text = x
	default:
		out, err := Marshal(x)
		return string(out), err
	}
	var decoded any
	if err := json.Unmarshal(text, &decoded); err != nil {
		return "", fmt.Errorf("result is not JSON: %w", err)
	}
	out, err := Marshal(decoded)
	return string(out), err
}
