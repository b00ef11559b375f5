/** The bundle cache directory of a checkout (see bundle.js). */
export function cacheDirFor(root: string): string;
/** The bundle's entry file for the checkout's sources as they are now, built if needed. */
export function bundledEntry(root?: string): Promise<string>;
