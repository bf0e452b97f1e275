export function chromiumPath(): string;
export function chromiumArgs(): string[];
