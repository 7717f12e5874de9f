//go:build lua54

package lua54

import (
	"testing"

	"bridgebench/udftrim/loaders/luavm/luatest"
)

func TestMain(m *testing.M) { luatest.Main(m) }

func TestLua54(t *testing.T) { luatest.Run(t) }

func BenchmarkLua54(b *testing.B) { luatest.Bench(b) }
