package keyring

import "testing"

// FuzzParse: the keys.json parser never panics; what it accepts
// re-marshals to bytes it accepts again, with the same entries.
func FuzzParse(f *testing.F) {
	f.Add([]byte(v010Keys))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"keys":[{"active":true,"algorithm":"ed25519","backend":"os","created_at":"c","key_id":"ed25519-00","public_key":"A3ZDRqyfVA6i9Q7PAIUWGVE3RDsvAIrI+lQiS2dqYmk=","revoked_at":null}]}`))
	f.Add([]byte(`{"keys":[{"key_id":""}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data, "fuzz.json")
		if err != nil {
			return
		}
		out, err := marshal(entries)
		if err != nil {
			t.Fatalf("accepted keyring does not marshal: %v", err)
		}
		again, err := Parse(out, "again.json")
		if err != nil {
			t.Fatalf("re-marshalled keyring refused: %v\n%s", err, out)
		}
		if len(again) != len(entries) {
			t.Fatalf("entries %d -> %d", len(entries), len(again))
		}
	})
}

// FuzzParseTrust: the trust file parser never panics; what it accepts
// re-marshals to bytes it accepts again.
func FuzzParseTrust(f *testing.F) {
	f.Add([]byte(`{"format":"witness-trust/v1","keys":[{"algorithm":"ed25519","created_at":"c","key_id":"ed25519-00","public_key":"A3ZDRqyfVA6i9Q7PAIUWGVE3RDsvAIrI+lQiS2dqYmk="}]}`))
	f.Add([]byte(`{"format":"witness-trust/v1","keys":[]}`))
	f.Add([]byte(`{"format":"witness-trust/v1","keys":[],"log_keys":["example.test/log+2c42e571+AR+TEBQjZ21URxcJ36R2Hrsn1+WUOKut+9ikqgP4m22Q"]}`))
	f.Add([]byte(`{"format":"witness-trust/v1","keys":[],"log_keys":["a+b+c","a+b+c"]}`))
	f.Add([]byte(`{"format":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ParseTrust(data, "fuzz.json")
		if err != nil {
			return
		}
		out, err := ts.Marshal()
		if err != nil {
			t.Fatalf("accepted trust file does not marshal: %v", err)
		}
		if _, err := ParseTrust(out, "again.json"); err != nil {
			t.Fatalf("re-marshalled trust file refused: %v\n%s", err, out)
		}
	})
}
