// Package josebench measures the two JOSE libraries package auth chose between, verifying the
// same access token with a cached key: github.com/golang-jwt/jwt/v5 (taken; here with
// github.com/MicahParks/keyfunc/v3 for the key, which package auth looks up itself) and
// github.com/lestrrat-go/jwx/v3. It is a module of its own so that jwx stays out of the
// engine's module graph:
//
//	cd auth/josebench && go test -run '^$' -bench . -benchmem
package josebench
