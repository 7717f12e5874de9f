package hcrpc_test

import (
	"testing"

	"bridgebench/plugincall/contract"
	_ "bridgebench/plugincall/loaders/hcrpc"
	"bridgebench/plugincall/loaders/hcwire/hctest"
)

const server = "bridgebench/plugincall/servers/hcplugin"

func TestAnswers(t *testing.T) {
	hctest.CheckAnswers(t, "hcrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestCloseEndsProcess(t *testing.T) {
	hctest.CheckClose(t, "hcrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestKilledPluginFails(t *testing.T) {
	hctest.CheckKill(t, "hcrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestLongTempDirIsAnError(t *testing.T) {
	hctest.CheckLongTempDir(t, "hcrpc", contract.Config{"server": hctest.BuildServer(t, server)})
}

func TestNoServer(t *testing.T) {
	if _, err := contract.Open("hcrpc", contract.Config{}); err == nil {
		t.Fatal("open without a server binary: no error")
	}
}
