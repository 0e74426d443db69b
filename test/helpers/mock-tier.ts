// Tier 1 for a test: the real mock model server on loopback and the model environment pointed
// at it. The benchmarks need the same, so it lives in bench/.

export { extractionCallsOf, mockTierEnv, startMockTier, type MockTier } from '../../bench/mock-tier.ts';
