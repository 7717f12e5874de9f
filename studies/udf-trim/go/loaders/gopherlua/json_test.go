package gopherlua

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// eval runs Lua code with the json module and returns the string it leaves in the global out.
func eval(t *testing.T, code string) (string, error) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	L.PreloadModule("json", openJSON)
	if err := L.DoString("local json = require('json')\n" + code); err != nil {
		return "", err
	}
	return L.GetGlobal("out").String(), nil
}

func TestJSONModule(t *testing.T) {
	cases := map[string]string{
		`out = json.encode(json.decode('{"a":null,"b":[1,null,3],"c":{"d":[]},"e":"<&>"}'))`: `{"a":null,"b":[1,null,3],"c":{"d":{}},"e":"<&>"}`,
		`out = json.encode({})`:                                `{}`,
		`out = json.encode({1, 2, "x", true})`:                 `[1,2,"x",true]`,
		`out = json.encode({[1] = "a", [3] = "c"})`:            `{"1":"a","3":"c"}`,
		`out = json.encode({[1] = "a", x = "y"})`:              `{"1":"a","x":"y"}`,
		`out = json.encode({[2.5] = 1, [-1] = 2})`:             `{"-1":2,"2.5":1}`,
		`out = json.encode(nil)`:                               `null`,
		`out = json.encode(json.null)`:                         `null`,
		`out = json.encode(1700000000)`:                        `1700000000`,
		`out = json.encode(103.625)`:                           `103.625`,
		`out = tostring(json.decode('null') == json.null)`:     `true`,
		`out = json.encode(json.decode('"\\u00e9\\n"'))`:       `"é\n"`,
		`local t = json.decode('[10,20]'); out = tostring(#t)`: `2`,
	}
	for code, want := range cases {
		got, err := eval(t, code)
		if err != nil || got != want {
			t.Errorf("%s\n got %q, %v\nwant %q", code, got, err, want)
		}
	}
	bad := map[string]string{
		`out = json.encode(function() end)`:              "cannot encode a function",
		`out = json.encode({f = print})`:                 "cannot encode a function",
		`out = json.encode(0/0)`:                         "cannot encode NaN",
		`out = json.encode({x = 1/0})`:                   "cannot encode +Inf",
		`local t = {}; t.self = t; out = json.encode(t)`: "nested more than",
		`out = json.encode({[true] = 1})`:                "table key of type boolean",
		`out = json.encode({[1] = 1, ["1"] = 2})`:        "both as a string and as a number",
		`out = json.decode('{')`:                         "json.decode",
		`out = json.decode('[1] 2')`:                     "json.decode",
		`out = json.decode()`:                            "string expected",
	}
	for code, want := range bad {
		_, err := eval(t, code)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", code, err, want)
		}
	}
}
