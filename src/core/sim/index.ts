export * from './params';
export * from './scenarios';
export * from './simulate';
export * from './staleness';
export * from './types';
