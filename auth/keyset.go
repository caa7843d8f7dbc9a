package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// sigKey is one key of a JWK Set that can verify signatures.
type sigKey struct {
	alg string // the JWK's alg, "" when it names none
	key crypto.PublicKey
}

// parseKeySet reads a JWK Set (RFC 7517 §5) key by key and keeps the keys that can verify
// signatures: RSA, EC on P-256, P-384 or P-521, and Ed25519 public keys (their private
// members, if published, are ignored) whose use is sig or absent and whose key_ops, if any,
// include verify. Every other key is left out, and skip is called with its name (its kid, else
// its position) and why: a key of a type or curve this verifier does not know (secp256k1, a
// new kty), an encryption key (use enc), a symmetric key, a malformed one. The rest of the set
// stays usable. A document that is not a JWK Set, or a set without any usable key, is an
// error. Of two keys with one kid, the first is kept.
func parseKeySet(doc []byte, skip func(name, why string)) (byKID map[string]sigKey, all []sigKey, err error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, nil, fmt.Errorf("not a JWK Set: %w", err)
	}
	if set.Keys == nil {
		return nil, nil, errors.New(`not a JWK Set: no "keys" array`)
	}
	byKID = make(map[string]sigKey, len(set.Keys))
	for i, raw := range set.Keys {
		var m jwkset.JWKMarshal
		name := fmt.Sprintf("#%d", i)
		if err := json.Unmarshal(raw, &m); err != nil {
			skip(name, "not a JWK")
			continue
		}
		if m.KID != "" {
			name = fmt.Sprintf("%q", m.KID)
		}
		key, why := signatureKey(m)
		if why != "" {
			skip(name, why)
			continue
		}
		k := sigKey{alg: string(m.ALG), key: key}
		if m.KID != "" {
			if _, dup := byKID[m.KID]; dup {
				skip(name, "a second key with the same kid")
				continue
			}
			byKID[m.KID] = k
		}
		all = append(all, k)
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("none of its %d keys can verify signatures", len(set.Keys))
	}
	return byKID, all, nil
}

// signatureKey returns the public key of m when it can verify signatures, else why not.
func signatureKey(m jwkset.JWKMarshal) (crypto.PublicKey, string) {
	switch {
	case m.USE == jwkset.UseEnc:
		return nil, "use enc: an encryption key, never used for signatures"
	case m.USE != "" && m.USE != jwkset.UseSig:
		return nil, fmt.Sprintf("use %q", m.USE)
	case len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify):
		return nil, fmt.Sprintf("key_ops %v without verify", m.KEYOPS)
	case m.KTY == jwkset.KtyOct:
		return nil, "a symmetric (oct) key: HMAC keys come from JWTConfig.SharedSecret only"
	case m.KTY != jwkset.KtyRSA && m.KTY != jwkset.KtyEC && m.KTY != jwkset.KtyOKP:
		return nil, fmt.Sprintf("unsupported key type %q", m.KTY)
	}
	// Public members only: a set that publishes private ones (a test's) verifies the same.
	pub := jwkset.JWKMarshal{KTY: m.KTY, CRV: m.CRV, X: m.X, Y: m.Y, N: m.N, E: m.E}
	jwks, err := jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{pub}}.JWKSlice()
	if err != nil {
		if errors.Is(err, jwkset.ErrUnsupportedKey) {
			return nil, fmt.Sprintf("unsupported key: kty %q, crv %q", m.KTY, m.CRV)
		}
		return nil, fmt.Sprintf("malformed %s key", m.KTY)
	}
	switch k := jwks[0].Key().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return k, ""
	}
	return nil, fmt.Sprintf("not a signature key: kty %q, crv %q", m.KTY, m.CRV)
}

// lookup returns the key of a token's header in the set: the key of its kid, whose alg (when
// the JWK names one) must be the token's; or, for a token without kid, every key whose alg
// fits, for the parser to try in turn. errUnknownKey when there is none.
func lookup(byKID map[string]sigKey, all []sigKey, t *jwt.Token) (any, error) {
	alg, _ := t.Header["alg"].(string)
	kidv, hasKID := t.Header["kid"]
	if !hasKID {
		var ks jwt.VerificationKeySet
		for _, k := range all {
			if k.alg == "" || k.alg == alg {
				ks.Keys = append(ks.Keys, k.key)
			}
		}
		if len(ks.Keys) == 0 {
			return nil, errUnknownKey
		}
		return ks, nil
	}
	kid, ok := kidv.(string)
	if !ok {
		return nil, errors.New("kid is not a string")
	}
	k, ok := byKID[kid]
	if !ok {
		return nil, errUnknownKey
	}
	if k.alg != "" && k.alg != alg {
		return nil, fmt.Errorf("the key %q is for %s, not %s", kid, k.alg, alg)
	}
	return k.key, nil
}
