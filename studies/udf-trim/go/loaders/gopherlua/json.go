package gopherlua

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"bridgebench/udftrim/udf"
)

// The json module that user scripts get from require("json"), written in Go over encoding/json:
//
//	json.decode(text)  JSON text → Lua value: objects and arrays become tables (arrays indexed 1..n),
//	                   numbers become Lua numbers (float64), null becomes json.null.
//	json.encode(value) Lua value → JSON text (keys sorted, no HTML escaping, as udf.Marshal).
//	json.null          the value that stands for JSON null (a Lua nil cannot be stored in a table).
//
// Encoding rules: a table whose keys are exactly 1..n (n ≥ 1) is an array; any other table is an
// object, with string keys or number keys (written as Lua writes the number); an empty table is {}
// (so an empty JSON array does not survive a round trip: the study's rows have none). nil and json.null
// encode as null; NaN, infinities, functions, coroutines, userdata other than json.null, other key types,
// and tables nested deeper than maxDepth (which is how a cycle shows) are errors.

const maxDepth = 1000

type nullMarker struct{}

func openJSON(L *lua.LState) int {
	null := L.NewUserData()
	null.Value = nullMarker{}
	mod := L.NewTable()
	mod.RawSetString("null", null)
	mod.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		text := L.CheckString(1)
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			L.RaiseError("json.decode: %v", err)
		}
		L.Push(toLua(L, v, null))
		return 1
	}))
	mod.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		v, err := fromLua(L.CheckAny(1), 0)
		if err == nil {
			var text []byte
			if text, err = udf.Marshal(v); err == nil {
				L.Push(lua.LString(text))
				return 1
			}
		}
		L.RaiseError("json.encode: %v", err)
		return 0
	}))
	L.Push(mod)
	return 1
}

// toLua converts what encoding/json decodes into `any` to a Lua value.
func toLua(L *lua.LState, v any, null lua.LValue) lua.LValue {
	switch x := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, toLua(L, e, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, toLua(L, e, null))
		}
		return t
	}
	// encoding/json gives nothing else when decoding into any.
	panic(fmt.Sprintf("json.decode: unexpected %T", v))
}

// fromLua converts a Lua value to what encoding/json encodes (nil, bool, float64, string, []any,
// map[string]any).
func fromLua(v lua.LValue, depth int) (any, error) {
	switch x := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(x), nil
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("cannot encode %v", f)
		}
		return f, nil
	case lua.LString:
		return string(x), nil
	case *lua.LUserData:
		if _, ok := x.Value.(nullMarker); ok {
			return nil, nil
		}
	case *lua.LTable:
		if depth >= maxDepth {
			return nil, fmt.Errorf("tables nested more than %d deep (a cycle?)", maxDepth)
		}
		return tableFromLua(x, depth+1)
	}
	return nil, fmt.Errorf("cannot encode a %s", v.Type())
}

func tableFromLua(t *lua.LTable, depth int) (any, error) {
	obj := make(map[string]any)
	n, indices, maxIndex := 0, 0, 0
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		var key string
		switch kk := k.(type) {
		case lua.LString:
			key = string(kk)
		case lua.LNumber:
			key = numberKey(float64(kk))
			if f := float64(kk); f >= 1 && f == math.Trunc(f) && f <= math.MaxInt32 {
				indices++
				maxIndex = max(maxIndex, int(f))
			}
		default:
			err = fmt.Errorf("cannot encode a table key of type %s", k.Type())
			return
		}
		if _, dup := obj[key]; dup {
			err = fmt.Errorf("table has the key %q both as a string and as a number", key)
			return
		}
		var gv any
		if gv, err = fromLua(v, depth); err == nil {
			obj[key] = gv
			n++
		}
	})
	if err != nil {
		return nil, err
	}
	if n == 0 || indices != n || maxIndex != n {
		return obj, nil
	}
	// n distinct integer keys, all in 1..n: the keys are exactly 1..n, an array.
	arr := make([]any, n)
	for i := range arr {
		arr[i] = obj[strconv.Itoa(i+1)]
	}
	return arr, nil
}

// numberKey writes a number key as Lua's tostring does for integers and short decimals.
func numberKey(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}
