// Package yaegi is the mechanism "yaegi": the contract's functions as Go source (plugin.go.txt,
// embedded in the binary, or the file Config["yaegi_source"] names) interpreted by traefik/yaegi.
//
// Open makes an interpreter, evaluates the source and looks plugin.Int and plugin.Bytes up once, as Go
// func values (yaegi wraps an interpreted function in a reflect.MakeFunc-made function); a call runs
// the interpreter on the host's goroutine. The payload slice is passed as is (no copy); the result is
// the slice the interpreted code made.
package yaegi

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/traefik/yaegi/interp"

	"bridgebench/plugincall/contract"
)

// Name is the mechanism name.
const Name = "yaegi"

//go:embed plugin.go.txt
var source string

func init() { contract.Register(Name, Open) }

type yaegiPlugin struct {
	intFn   func(int64) int64
	bytesFn func([]byte) []byte
}

// Open interprets the plugin's source and looks its functions up.
func Open(cfg contract.Config) (contract.Plugin, error) {
	src := source
	if path := cfg["yaegi_source"]; path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		src = string(b)
	}
	i := interp.New(interp.Options{})
	if _, err := i.Eval(src); err != nil {
		return nil, fmt.Errorf("%s: evaluating the plugin source: %w", Name, err)
	}
	p := &yaegiPlugin{}
	var err error
	if p.intFn, err = lookup[func(int64) int64](i, "plugin.Int"); err != nil {
		return nil, err
	}
	if p.bytesFn, err = lookup[func([]byte) []byte](i, "plugin.Bytes"); err != nil {
		return nil, err
	}
	return p, nil
}

func lookup[F any](i *interp.Interpreter, name string) (F, error) {
	var zero F
	v, err := i.Eval(name)
	if err != nil {
		return zero, fmt.Errorf("%s: looking %s up: %w", Name, name, err)
	}
	if !v.IsValid() || !v.CanInterface() {
		return zero, fmt.Errorf("%s: %s is no value", Name, name)
	}
	fn, ok := v.Interface().(F)
	if !ok {
		return zero, fmt.Errorf("%s: %s is a %s, want a %T", Name, name, v.Type(), zero)
	}
	return fn, nil
}

func (p *yaegiPlugin) Int(x int64) (int64, error)      { return p.intFn(x), nil }
func (p *yaegiPlugin) Bytes(in []byte) ([]byte, error) { return p.bytesFn(in), nil }

func (p *yaegiPlugin) Close() error {
	p.intFn, p.bytesFn = nil, nil
	return nil
}
