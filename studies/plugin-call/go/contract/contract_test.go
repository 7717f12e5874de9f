package contract

import (
	"bytes"
	"testing"
)

func TestFunctionsAreDeterministicAndInvertible(t *testing.T) {
	if IntFunc(1) != (2654435761+12345)&0xffffffff || IntFunc(1) == IntFunc(2) {
		t.Error("IntFunc")
	}
	p := Payload(Payloads["1k"])
	back := BytesFunc(BytesFunc(p)) // reversing twice and XOR-ing twice gives the input back
	if !bytes.Equal(back, p) || len(BytesFunc(nil)) != 0 {
		t.Error("BytesFunc")
	}
}
