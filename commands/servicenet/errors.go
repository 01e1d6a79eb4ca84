package servicenet

import "errors"

// ErrInvalidID is the cause of every InvalidIDError, for errors.Is.
var ErrInvalidID = errors.New("invalid registry id")

// ErrNoAcceptablePayment: none of a registry's payment requirements can be
// paid from the requested network with the exact scheme and EIP-3009.
var ErrNoAcceptablePayment = errors.New("no acceptable payment requirement")

// ErrAccountExists: Create was given a ref that already has a key.
var ErrAccountExists = errors.New("payment account already exists")

// ErrAccountNotFound: no key file for the ref.
var ErrAccountNotFound = errors.New("payment account not found")

// errNoSignature guards against a signer that returns nothing: an unsigned
// request would be refused by the registry as the node's fault, later and
// less clearly.
var errNoSignature = errors.New("node key gave an empty signature")

// errPanicked is what the waiters of a fetch that panicked receive.
var errPanicked = errors.New("card fetch panicked")
