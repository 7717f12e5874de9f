//go:build luajit

package luajit

import (
	"testing"

	"bridgebench/udftrim/loaders/luavm/luatest"
)

func TestMain(m *testing.M) { luatest.Main(m) }

func TestLuaJIT(t *testing.T) { luatest.Run(t) }

func BenchmarkLuaJIT(b *testing.B) { luatest.Bench(b) }
